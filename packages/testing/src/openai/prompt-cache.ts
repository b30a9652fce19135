/**
 * OpenAI's prompt caching rule, as the fake applies it: a prompt of at least 1,024 tokens may be
 * served from a cache of earlier prompts, for the longest prefix it shares with one of them, in
 * steps of 128 tokens (core's `servedByCache`, the rule `ebb simulate` applies too). The prefix is compared as the provider serializes a request: the tools, then
 * the messages in order (role, then content), so a change anywhere ends the cacheable part there.
 *
 * Requests are routed by `prompt_cache_key` when they name one, else by their first ~256 tokens (for
 * a bot, its system prompt): without a key, channels that share a system prompt share one cache
 * machine, whose entries push each other out. An entry expires once longer than `ttlMs` has passed
 * without use (as `ebb simulate` and `promptIsCold` count a cold prompt).
 */
import { OPENAI_PREFIX_CACHE, servedByCache } from '@ebb/core';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { messageText } from './wire.js';

export interface PromptCacheOptions {
  /** Prompts shorter than this are never cached. */
  readonly minTokens: number;
  /** Cached tokens are a multiple of this. */
  readonly stepTokens: number;
  /** Prompts kept per routing key, newest first out last. */
  readonly entriesPerKey: number;
  /** An entry not used for this long is gone. */
  readonly ttlMs: number;
}

export const OPENAI_PROMPT_CACHE = {
  ...OPENAI_PREFIX_CACHE,
  entriesPerKey: 8,
  ttlMs: 10 * 60_000,
} as const satisfies PromptCacheOptions;

interface Entry {
  readonly segments: readonly string[];
  usedAt: number;
}

export class PromptCache {
  readonly #options: PromptCacheOptions;
  readonly #countTokens: (text: string) => number;
  readonly #now: () => number;
  readonly #byKey = new Map<string, Entry[]>();

  constructor(options: PromptCacheOptions, countTokens: (text: string) => number, now: () => number) {
    this.#options = options;
    this.#countTokens = countTokens;
    this.#now = now;
  }

  /**
   * The cached tokens of `request`, whose prompt counts `promptTokens`; the request then joins the
   * cache for the next ones.
   */
  serve(request: ChatCompletionCreateParams, promptTokens: number): number {
    const segments = serialize(request);
    const key = routingKey(request, segments);
    const now = this.#now();
    const live = (this.#byKey.get(key) ?? []).filter((e) => now - e.usedAt <= this.#options.ttlMs);
    let best = 0;
    let bestEntry: Entry | undefined;
    for (const entry of live) {
      const shared = this.#sharedTokens(entry.segments, segments);
      if (shared > best) {
        best = shared;
        bestEntry = entry;
      }
    }
    if (bestEntry) bestEntry.usedAt = now;
    live.unshift({ segments, usedAt: now });
    this.#byKey.set(key, live.slice(0, this.#options.entriesPerKey));
    return servedByCache(best, promptTokens, this.#options);
  }

  clear(): void {
    this.#byKey.clear();
  }

  /** Tokens of the longest common prefix: whole equal segments, then the shared head of the first that differs. */
  #sharedTokens(a: readonly string[], b: readonly string[]): number {
    let tokens = 0;
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const x = a[i] as string;
      const y = b[i] as string;
      if (x === y) {
        tokens += this.#countTokens(x);
        continue;
      }
      let n = 0;
      while (n < x.length && n < y.length && x[n] === y[n]) n++;
      // The last token of a shared head may be spelled differently once the texts part.
      return tokens + Math.max(0, this.#countTokens(x.slice(0, n)) - 1);
    }
    return tokens;
  }
}

/** The request as the provider lays it out for the model: tools, then each message. */
function serialize(request: ChatCompletionCreateParams): string[] {
  const segments: string[] = [];
  if (request.tools && request.tools.length > 0) segments.push(JSON.stringify(request.tools));
  for (const message of request.messages) segments.push(`<|${message.role}|>${messageText(message)}`);
  return segments;
}

function routingKey(request: ChatCompletionCreateParams, segments: readonly string[]): string {
  const key = (request as { prompt_cache_key?: unknown }).prompt_cache_key;
  // OpenAI routes by a hash of the prompt's first ~256 tokens (about 1,024 characters) and the key.
  return typeof key === 'string' && key !== '' ? `key:${key}` : `prefix:${segments.join('').slice(0, 1024)}`;
}
