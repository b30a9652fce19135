/**
 * Per-channel settings for the worker, resolved from config.toml: the summary budget, the memory
 * scope, the chat model's tokenizer, the summarizer and `[prices]` (the cost on a pass's log line).
 * Offline (no OPENAI_API_KEY and no `[llm] base_url`) the summarizer is the extractive one. A
 * channel that has reached a spend limit (`[budget]`, read from `usage`) and names a
 * `cheaper_model` is summarized on that model until the limit resets: its passes keep running,
 * which is what keeps its window safe, at the cheaper price.
 * Summarizers are shared per model and server; their clients come from `openAiClient` (`maxRetries: 0`,
 * since the summarizer runs its own retries).
 */
import { type EbbConfig, type EbbEnv, resolveChannel } from '@ebb/config';
import { ChannelSpend, type Logger, reachedLimit, type Summarizer, type UsageStore } from '@ebb/core';
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
  /** The clock a spend limit's period is read on (default `Date.now`; tests move it). */
  readonly now?: () => number;
}

export const DEFAULT_LLM_TIMEOUT_MS = 120_000;

export function passSettingsResolver(
  options: PassSettingsOptions,
): (channelKey: string) => Promise<ChannelPassSettings> {
  const summarizers = new Map<string, Summarizer>();
  const { usage } = options;
  const spend = usage && new ChannelSpend({ usage, prices: () => options.config().prices });
  /** `[budget] cheaper_model` once the channel has reached a limit, else its summarizer. */
  const modelOf = async (channel: ReturnType<typeof resolveChannel>): Promise<string> => {
    const { budget } = channel;
    if (spend === undefined || budget.cheaperModel === undefined || !budget.limited)
      return channel.compaction.summarizerModel;
    const now = (options.now ?? Date.now)();
    const spends = await spend.againstLimits(channel.channelKey, budget, now, { untilReached: true });
    return reachedLimit(spends) ? budget.cheaperModel : channel.compaction.summarizerModel;
  };

  return async (channelKey) => {
    const config = options.config();
    const channel = resolveChannel(config, channelKey);
    const tokenizer = await loadTokenizer(channel.llm.encoding);
    const server = { apiKey: options.env.OPENAI_API_KEY, baseUrl: channel.llm.baseUrl };
    const offline = isOffline(server);
    const model = offline ? channel.compaction.summarizerModel : await modelOf(channel);
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
