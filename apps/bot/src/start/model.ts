/**
 * The model part: the labelled offline responder (announced) when no OPENAI_API_KEY and no
 * `[llm] base_url` are set, else the metered chat models of each channel. Nothing to stop.
 */
import { resolveChannel } from '@ebb/config';
import type { ChatModel } from '@ebb/core';
import { isOffline, OFFLINE_LABEL } from '@ebb/llm';
import type { EbbMetrics } from '@ebb/observability';
import { chatModels } from './chat-models.js';
import type { StartOptions } from './options.js';

export interface Model {
  readonly offline: boolean;
  readonly chatModel: (channelKey: string, model?: string) => ChatModel;
  /** What the start-up line names: the default channel's model and the server it is asked at. */
  readonly describe: { readonly model: string; readonly baseUrl: string };
}

/** The server a model is asked at when `[llm] base_url` is unset (the openai client's default). */
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export function startModel(options: StartOptions, metrics: EbbMetrics): Model {
  const { env, logger } = options;
  const defaults = resolveChannel(options.config(), 'defaults');
  const offline = isOffline({ apiKey: env.OPENAI_API_KEY, baseUrl: defaults.llm.baseUrl });
  if (offline) {
    logger.info(
      { event: 'ebb.fallback', part: 'llm' },
      `no OPENAI_API_KEY and no [llm] base_url: answering with the ${OFFLINE_LABEL} and extractive summaries`,
    );
  }
  return {
    offline,
    chatModel: chatModels(options, offline, metrics),
    describe: {
      model: offline ? OFFLINE_LABEL : defaults.llm.model,
      baseUrl: defaults.llm.baseUrl ?? OPENAI_BASE_URL,
    },
  };
}
