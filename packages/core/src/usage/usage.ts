/**
 * What a channel's model calls took, kept per hour so `ebb status` and the dashboard can say what a
 * channel cost over the last day and how much of its prompts the provider served from its cache.
 * The bot records each answered turn (`reply`), the worker each pass (`summary`).
 */
import { type ModelPrice, type ModelUsage, pricedCost } from './pricing.js';

export type UsagePurpose = 'reply' | 'summary';

/** Calls of one model for one channel and purpose, and their tokens. */
export interface UsageTotals {
  readonly channelKey: string;
  readonly purpose: UsagePurpose;
  readonly model: string;
  readonly calls: number;
  readonly promptTokens: number;
  /** The part of `promptTokens` the provider served from its prompt cache. */
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** Turns answered (a reply record is one); absent counts 0, as on a pass's record. */
  readonly replies?: number;
  /**
   * Of `replies`, those whose channel had not been prompted for longer than its cache lifetime
   * (`cache_ttl_seconds`): the provider's cache had let the prompt go, and the reply paid it in full
   * (`coldPrompt`). Absent counts 0.
   */
  readonly coldReplies?: number;
}

export interface UsageStore {
  /** Adds one turn's or one pass's calls to the hour `at` falls in. */
  record(usage: UsageTotals, at: Date): Promise<void>;
  /** Totals since `since`, per channel, purpose and model; only `channelKeys` when given. */
  totalsSince(since: Date, channelKeys?: readonly string[]): Promise<UsageTotals[]>;
  /**
   * Totals of the hours from `from` up to `to` (exclusive; absent: every hour since), per channel,
   * purpose and model, of the channels `query.channel` names.
   */
  totalsIn(query: UsageQuery): Promise<UsageTotals[]>;
}

export interface UsageQuery {
  readonly from: Date;
  readonly to?: Date;
  /**
   * One channel (`key`), a channel and its threads (`withThreads`: the key and every key under
   * `<key>:`), or every channel whose key starts with `keyPrefix` (a workspace).
   */
  readonly channel:
    | { readonly key: string }
    | { readonly withThreads: string }
    | { readonly keyPrefix: string };
}

/**
 * The channels that reached a spend limit, once per limit and period (`noticeKey`): whichever replica
 * records it first sends the notice and logs `budget.reached`; the others see it recorded.
 */
export interface BudgetNotices {
  /** Records `noticeKey` for the period that began at `periodStart`: true for the first to record it. */
  claim(noticeKey: string, periodStart: Date, at: Date): Promise<boolean>;
  /** Takes a claim back (its notice could not be posted), so the channel's next message tries again. */
  release(noticeKey: string, periodStart: Date): Promise<void>;
}

/** A channel's usage over a period, all models and purposes together, priced where `[prices]` can. */
export interface ChannelCost {
  readonly calls: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** `cachedTokens / promptTokens` of the replies (what the cache can do for them), null with none. */
  readonly replyCacheShare: number | null;
  /** Turns answered. */
  readonly replies: number;
  /** `coldReplies / replies`: the share that came after a silence longer than the cache lifetime; null with none. */
  readonly coldReplyShare: number | null;
  /** USD of the replies' calls per 1,000 replies, at `[prices]`; null with no replies or a model not priced. */
  readonly usdPer1kReplies: number | null;
  /** USD at `[prices]`; null when a model used is not priced (a partial sum would mislead). */
  readonly costUsd: number | null;
  /** Models with calls but no `[prices."<model>"]`. */
  readonly unpriced: readonly string[];
}

/** Sums one channel's rows, pricing each model's own. */
export function channelCost(
  rows: readonly UsageTotals[],
  prices: Readonly<Record<string, ModelPrice>>,
): ChannelCost {
  let calls = 0;
  let promptTokens = 0;
  let cachedTokens = 0;
  let completionTokens = 0;
  let replyPrompt = 0;
  let replyCached = 0;
  let replies = 0;
  let coldReplies = 0;
  const usages: ModelUsage[] = [];
  const replyUsages: ModelUsage[] = [];
  for (const row of rows) {
    calls += row.calls;
    promptTokens += row.promptTokens;
    cachedTokens += row.cachedTokens;
    completionTokens += row.completionTokens;
    const usage = { input: row.promptTokens, cached: row.cachedTokens, output: row.completionTokens };
    usages.push({ model: row.model, usage });
    if (row.purpose === 'reply') {
      replyPrompt += row.promptTokens;
      replyCached += row.cachedTokens;
      replies += row.replies ?? 0;
      coldReplies += row.coldReplies ?? 0;
      replyUsages.push({ model: row.model, usage });
    }
  }
  const replyCost = pricedCost(replyUsages, prices).costUsd;
  return {
    calls,
    promptTokens,
    cachedTokens,
    completionTokens,
    replyCacheShare: replyPrompt > 0 ? replyCached / replyPrompt : null,
    replies,
    coldReplyShare: replies > 0 ? coldReplies / replies : null,
    usdPer1kReplies: replies > 0 && replyCost !== null ? (1000 * replyCost) / replies : null,
    ...pricedCost(usages, prices),
  };
}

/** The start of the hour `at` falls in (UTC). */
export function hourOf(at: Date): Date {
  const hour = new Date(at.getTime());
  hour.setUTCMinutes(0, 0, 0);
  return hour;
}
