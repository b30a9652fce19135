/** What an `OpenAiSummarizer` is built from, and what its passes (`SummaryPass`) run with. */
import type { Logger, RequestSettings, Summarizer, Tokenizer } from '@ebb/core';
import type OpenAI from 'openai';
import type { RequestDialect } from './request-dialect.js';
import type { RetryOptions } from './retry.js';

export interface OpenAiSummarizerOptions {
  /** Build it with `maxRetries: 0`; each call also passes `maxRetries: 0` so `retry` is the one policy. */
  readonly client: OpenAI;
  readonly model: string;
  /** The summarizer model's tokenizer. */
  readonly tokenizer: Tokenizer;
  /** The summarizer model's context window, in tokens (prompt and output together). */
  readonly contextWindow: number;
  /** The most output tokens one call may ask for (the model's output limit). */
  readonly maxOutputTokens?: number;
  /** Per try; a try that takes longer fails with `llm_timeout` and is retried. */
  readonly timeoutMs: number;
  readonly retry: RetryOptions;
  /** Writes the summary when the LLM keeps failing (the extractive summarizer). */
  readonly fallback: Summarizer;
  /** Milliseconds, for call durations. */
  readonly clock?: () => number;
  /** The `[llm]` request settings (token limit name, prompt cache key, temperature, reasoning effort). */
  readonly request?: RequestSettings;
  /** Where a parameter the server refused is reported (`llm.parameter_adapted`). */
  readonly log?: Logger;
}

export type ResolvedSummarizerOptions = OpenAiSummarizerOptions &
  Required<Pick<OpenAiSummarizerOptions, 'maxOutputTokens' | 'clock'>> & {
    /** What this server accepts, learned across the summarizer's passes. */
    readonly dialect: RequestDialect;
  };
