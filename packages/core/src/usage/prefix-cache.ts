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
 */

export const OPENAI_PREFIX_CACHE = { minTokens: 1024, stepTokens: 128 } as const;

export type CacheBreakCause = 'splice' | 'truncation' | 'microcompaction';

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
  /** Tokens of earlier prompts a compaction event made uncacheable, by the kind of event. */
  readonly missedBy: Readonly<Record<CacheBreakCause, number>>;
}

export class PrefixCacheMeter {
  #previous: number | undefined;
  #breakAt = Number.POSITIVE_INFINITY;
  #cause: CacheBreakCause = 'splice';
  #prompts = 0;
  #promptTokens = 0;
  #cachedTokens = 0;
  readonly #missedBy: Record<CacheBreakCause, number> = { splice: 0, truncation: 0, microcompaction: 0 };

  /** Something `at` tokens into the prompt changed since the last prompt (the earliest change counts). */
  broke(at: number, cause: CacheBreakCause): void {
    if (at < this.#breakAt) {
      this.#breakAt = at;
      this.#cause = cause;
    }
  }

  /** A prompt of `tokens` is sent: returns the tokens the cache serves of it. */
  prompt(tokens: number): number {
    const previous = this.#previous ?? 0;
    const shared = Math.min(previous, this.#breakAt);
    const cached = servedByCache(shared, tokens);
    if (shared < previous) {
      const wouldHave = servedByCache(Math.min(previous, tokens), tokens);
      this.#missedBy[this.#cause] += Math.max(0, wouldHave - cached);
    }
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
      missedBy: { ...this.#missedBy },
    };
  }
}
