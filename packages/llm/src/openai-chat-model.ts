/**
 * The model that answers in channels, through any OpenAI-compatible server. Retries transient
 * failures (rate limits honouring Retry-After, 5xx, timeouts) a few times; a context overflow is
 * not retried here but thrown as `llm_context_overflow`, so the bot can truncate and try again.
 */
import type { ChatMessage, ChatModel, ChatReply } from '@ebb/core';
import type OpenAI from 'openai';
import { readContent, readUsage } from './completion.js';
import { DEFAULT_RETRY, type RetryOptions, withRetries } from './retry.js';

export interface OpenAiChatModelOptions {
  /** Built with `maxRetries: 0`: `retry` is the one retry policy. */
  readonly client: OpenAI;
  readonly model: string;
  readonly maxOutputTokens: number;
  readonly timeoutMs?: number;
  readonly retry?: RetryOptions;
}

export const DEFAULT_CHAT_TIMEOUT_MS = 60_000;
/** A user is waiting: fewer and shorter retries than a background summary. */
export const CHAT_RETRY = {
  ...DEFAULT_RETRY,
  attempts: 3,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 10_000,
} as const;

export class OpenAiChatModel implements ChatModel {
  readonly label: string;
  readonly #options: OpenAiChatModelOptions;

  constructor(options: OpenAiChatModelOptions) {
    this.#options = options;
    this.label = options.model;
  }

  async reply(messages: readonly ChatMessage[], signal?: AbortSignal): Promise<ChatReply> {
    const { client, model, maxOutputTokens } = this.#options;
    const result = await withRetries(
      async () => {
        const completion: unknown = await client.chat.completions.create(
          { model, messages: messages as OpenAI.ChatCompletionMessageParam[], max_tokens: maxOutputTokens },
          {
            timeout: this.#options.timeoutMs ?? DEFAULT_CHAT_TIMEOUT_MS,
            maxRetries: 0,
            ...(signal ? { signal } : {}),
          },
        );
        const usage = readUsage(completion);
        return {
          text: readContent(completion),
          promptTokens: usage.prompt,
          completionTokens: usage.completion,
        };
      },
      this.#options.retry ?? CHAT_RETRY,
      signal,
    );
    if (!result.ok) throw result.error;
    return result.value;
  }
}
