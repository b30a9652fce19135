/**
 * What a provider's prefix cache can serve of the prompts a channel sends, by OpenAI's rule (the one
 * the fake OpenAI server applies too): a prompt of at least 1,024 tokens is served from the cache for
 * the prefix it shares with the channel's previous prompt, in steps of 128 tokens. Anthropic's
 * breakpoints, DeepSeek, vLLM and SGLang cache prefixes too, with other step sizes.
 *
 * Ebb's prompt only grows between compaction events (`render-context.ts`), so the shared prefix is
 * the whole previous prompt unless an event changed something in it: a splice (from its first
 * changed span on), an emergency truncation, a microcompaction (from the first stubbed result).
 * `ebb simulate` reports the totals, and what each kind of event cost in tokens the cache could have
 * served had the prompt not changed.
 *
 * A cache also forgets: a prefix unused for longer than its lifetime (`ttlMs`, on the traffic's own
 * clock) is gone, and the next prompt is cold, paid in full (`expiry`). OpenAI documents 5 to 10
 * minutes of inactivity, or a day with `prompt_cache_retention = "24h"`.
 */

export const OPENAI_PREFIX_CACHE = { minTokens: 1024, stepTokens: 128 } as const;

export type CacheBreakCause = 'splice' | 'truncation' | 'microcompaction';
/** What made earlier prompts' tokens uncacheable: a compaction event, or the cache's lifetime running out. */
export type CacheMissCause = CacheBreakCause | 'expiry';

/** Tokens of a `promptTokens` prompt the cache serves when `sharedTokens` of it were seen before. */
export function servedByCache(
  sharedTokens: number,
  promptTokens: number,
  rule: { readonly minTokens: number; readonly stepTokens: number } = OPENAI_PREFIX_CACHE,
): number {
  if (promptTokens < rule.minTokens) return 0;
  const cached = Math.floor(Math.min(sharedTokens, promptTokens) / rule.stepTokens) * rule.stepTokens;
  return cached >= rule.minTokens ? cached : 0;
}

export interface PrefixCacheTotals {
  /** Prompts sent (one per answered message). */
  readonly prompts: number;
  readonly promptTokens: number;
  /** The part of `promptTokens` the cache can serve. */
  readonly cachedTokens: number;
  /** Prompts sent after a silence longer than the cache's lifetime: paid in full. */
  readonly coldPrompts: number;
  /** Tokens of earlier prompts a compaction event or the cache's expiry made uncacheable, by cause. */
  readonly missedBy: Readonly<Record<CacheMissCause, number>>;
}

export interface PrefixCacheOptions {
  /** How long a prefix stays cached after its last use (ms); unset: for ever. */
  readonly ttlMs?: number;
}

export class PrefixCacheMeter {
  readonly #ttlMs: number;
  #previous: number | undefined;
  #previousAt: number | undefined;
  #coldPrompts = 0;
  #breakAt = Number.POSITIVE_INFINITY;
  #cause: CacheBreakCause = 'splice';
  #prompts = 0;
  #promptTokens = 0;
  #cachedTokens = 0;
  readonly #missedBy: Record<CacheMissCause, number> = {
    splice: 0,
    truncation: 0,
    microcompaction: 0,
    expiry: 0,
  };

  constructor(options: PrefixCacheOptions = {}) {
    this.#ttlMs = options.ttlMs ?? Number.POSITIVE_INFINITY;
  }

  /** Something `at` tokens into the prompt changed since the last prompt (the earliest change counts). */
  broke(at: number, cause: CacheBreakCause): void {
    if (at < this.#breakAt) {
      this.#breakAt = at;
      this.#cause = cause;
    }
  }

  /** A prompt of `tokens` is sent at `at` (ms, the traffic's clock): returns the tokens the cache serves of it. */
  prompt(tokens: number, at = 0): number {
    const previous = this.#previous ?? 0;
    const expired = this.#previousAt !== undefined && at - this.#previousAt > this.#ttlMs;
    const shared = expired ? 0 : Math.min(previous, this.#breakAt);
    const cached = servedByCache(shared, tokens);
    if (shared < previous) {
      const wouldHave = servedByCache(Math.min(previous, tokens), tokens);
      // An expired cache would have served nothing whatever changed: the expiry is the cause.
      this.#missedBy[expired ? 'expiry' : this.#cause] += Math.max(0, wouldHave - cached);
    }
    if (expired) this.#coldPrompts++;
    this.#previousAt = at;
    this.#prompts++;
    this.#promptTokens += tokens;
    this.#cachedTokens += cached;
    this.#previous = tokens;
    this.#breakAt = Number.POSITIVE_INFINITY;
    return cached;
  }

  totals(): PrefixCacheTotals {
    return {
      prompts: this.#prompts,
      promptTokens: this.#promptTokens,
      cachedTokens: this.#cachedTokens,
      coldPrompts: this.#coldPrompts,
      missedBy: { ...this.#missedBy },
    };
  }
}
