/**
 * The chat model of each channel (or the one a turn names: `[budget] cheaper_model`): the offline
 * responder when no model is configured, otherwise one metered `OpenAiChatModel` per server, model,
 * reply budget and request settings, shared by the channels that use it (so what one learns of its
 * server, `max_tokens` say, serves them all).
 */
import { resolveChannel } from '@ebb/config';
import type { ChatModel } from '@ebb/core';
import { CHAT_RETRY, isOffline, OfflineResponder, OpenAiChatModel, openAiClient } from '@ebb/llm';
import { type EbbMetrics, meteredChatModel, tracedChatModel } from '@ebb/observability';
import { BotError } from '../errors.js';
import type { StartOptions } from './options.js';

/**
 * One chat model per server, model, reply budget and request settings; replies retry on
 * `options.llmRetry` (default: `CHAT_RETRY`).
 */
export function chatModels(
  options: Pick<StartOptions, 'config' | 'env' | 'llmRetry' | 'logger'>,
  offline: boolean,
  metrics: EbbMetrics,
): (channelKey: string, model?: string) => ChatModel {
  if (offline) {
    const responder = new OfflineResponder();
    return () => responder;
  }
  const models = new Map<string, ChatModel>();
  return (channelKey, named) => {
    const resolved = resolveChannel(options.config(), channelKey).llm;
    // `[budget] cheaper_model`: the same server and settings, another model.
    const llm = named === undefined ? resolved : { ...resolved, model: named };
    const key = JSON.stringify([llm.baseUrl ?? 'openai', llm.model, llm.maxOutputTokens, llm.request]);
    let model = models.get(key);
    if (!model) {
      const server = { apiKey: options.env.OPENAI_API_KEY, baseUrl: llm.baseUrl };
      if (isOffline(server)) {
        throw new BotError(`channel ${channelKey} has no model: set OPENAI_API_KEY or [llm] base_url`, {
          code: 'no_model',
        });
      }
      model = tracedChatModel(
        meteredChatModel(
          new OpenAiChatModel({
            client: openAiClient(server),
            model: llm.model,
            maxOutputTokens: llm.maxOutputTokens,
            retry: options.llmRetry ?? CHAT_RETRY,
            request: llm.request,
            log: options.logger,
          }),
          metrics.onLlmCalls,
        ),
        llm.baseUrl === undefined ? {} : { baseUrl: llm.baseUrl },
      );
      models.set(key, model);
    }
    return model;
  };
}
