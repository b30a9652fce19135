/**
 * Per-channel settings for the worker, resolved from config.toml: the summary budget, the memory
 * scope, the chat model's tokenizer, the summarizer and `[prices]` (the cost on a pass's log line).
 * Offline (no OPENAI_API_KEY and no `[llm] base_url`) the summarizer is the extractive one.
 * Summarizers are shared per model and server; their clients come from `openAiClient` (`maxRetries: 0`,
 * since the summarizer runs its own retries).
 */
import { type EbbConfig, type EbbEnv, resolveChannel } from '@ebb/config';
import type { Logger, Summarizer, UsageStore } from '@ebb/core';
import {
  DEFAULT_RETRY,
  ExtractiveSummarizer,
  isOffline,
  loadTokenizer,
  OpenAiSummarizer,
  openAiClient,
  type RetryOptions,
} from '@ebb/llm';
import type { ChannelPassSettings } from './compaction-processor.js';
import { recordedSummarizer } from './recorded-summarizer.js';

export interface PassSettingsOptions {
  /** Read on every call, so a reloaded config applies to the next pass. */
  readonly config: () => EbbConfig;
  readonly env: Pick<EbbEnv, 'OPENAI_API_KEY'>;
  /** Per summarizer call; the LLM's own timeout, retries then fallback happen inside it. */
  readonly llmTimeoutMs?: number;
  /** The LLM retry policy (default `DEFAULT_RETRY`); tests shorten it. */
  readonly retry?: RetryOptions;
  /** Wraps every summarizer built here (metrics count its LLM calls). */
  readonly wrap?: (summarizer: Summarizer) => Summarizer;
  /**
   * Where every pass's calls are recorded per channel (`recordedSummarizer`): the worker's passes and
   * the summaries the bot writes again after a deletion alike, so a channel's cost counts both.
   */
  readonly usage?: UsageStore;
  /** Where a request parameter the server refused is reported (`llm.parameter_adapted`). */
  readonly log?: Logger;
}

export const DEFAULT_LLM_TIMEOUT_MS = 120_000;

export function passSettingsResolver(
  options: PassSettingsOptions,
): (channelKey: string) => Promise<ChannelPassSettings> {
  const summarizers = new Map<string, Summarizer>();

  return async (channelKey) => {
    const config = options.config();
    const channel = resolveChannel(config, channelKey);
    const tokenizer = await loadTokenizer(channel.llm.encoding);
    const server = { apiKey: options.env.OPENAI_API_KEY, baseUrl: channel.llm.baseUrl };
    const offline = isOffline(server);
    const model = channel.compaction.summarizerModel;
    const key = offline
      ? 'extractive'
      : JSON.stringify([
          channel.llm.baseUrl ?? 'openai',
          model,
          channel.llm.contextWindow,
          channel.llm.request,
        ]);
    let summarizer = summarizers.get(key);
    if (!summarizer) {
      const extractive = new ExtractiveSummarizer({ tokenizer });
      summarizer = offline
        ? extractive
        : new OpenAiSummarizer({
            client: openAiClient(server),
            model,
            tokenizer,
            // The summarizer model is assumed to have the chat model's window.
            contextWindow: channel.llm.contextWindow,
            timeoutMs: options.llmTimeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
            retry: options.retry ?? DEFAULT_RETRY,
            fallback: extractive,
            request: channel.llm.request,
            ...(options.log ? { log: options.log } : {}),
          });
      if (options.wrap) summarizer = options.wrap(summarizer);
      if (options.usage) summarizer = recordedSummarizer(summarizer, options.usage, options.log);
      summarizers.set(key, summarizer);
    }
    return {
      summaryMaxTokens: channel.compaction.summaryMaxTokens,
      memoryScope: channel.memory.scope,
      tokenizer,
      summarizer,
      prices: config.prices,
    };
  };
}
