import { hourOf, type UsageStore, type UsageTotals } from '../usage/usage.js';

/** Keeps usage in memory: the reference for the Postgres store, and tests. */
export class InMemoryUsageStore implements UsageStore {
  readonly #rows = new Map<string, UsageTotals & { readonly hour: number }>();

  async record(usage: UsageTotals, at: Date): Promise<void> {
    const hour = hourOf(at).getTime();
    const key = JSON.stringify([usage.channelKey, hour, usage.purpose, usage.model]);
    const old = this.#rows.get(key);
    this.#rows.set(key, {
      ...usage,
      hour,
      calls: (old?.calls ?? 0) + usage.calls,
      promptTokens: (old?.promptTokens ?? 0) + usage.promptTokens,
      cachedTokens: (old?.cachedTokens ?? 0) + usage.cachedTokens,
      completionTokens: (old?.completionTokens ?? 0) + usage.completionTokens,
      replies: (old?.replies ?? 0) + (usage.replies ?? 0),
      coldReplies: (old?.coldReplies ?? 0) + (usage.coldReplies ?? 0),
    });
  }

  async totalsSince(since: Date, channelKeys?: readonly string[]): Promise<UsageTotals[]> {
    const from = hourOf(since).getTime();
    const wanted = channelKeys === undefined ? undefined : new Set(channelKeys);
    const sums = new Map<string, UsageTotals>();
    for (const row of this.#rows.values()) {
      if (row.hour < from || (wanted && !wanted.has(row.channelKey))) continue;
      const key = JSON.stringify([row.channelKey, row.purpose, row.model]);
      const old = sums.get(key);
      sums.set(key, {
        channelKey: row.channelKey,
        purpose: row.purpose,
        model: row.model,
        calls: (old?.calls ?? 0) + row.calls,
        promptTokens: (old?.promptTokens ?? 0) + row.promptTokens,
        cachedTokens: (old?.cachedTokens ?? 0) + row.cachedTokens,
        completionTokens: (old?.completionTokens ?? 0) + row.completionTokens,
        replies: (old?.replies ?? 0) + (row.replies ?? 0),
        coldReplies: (old?.coldReplies ?? 0) + (row.coldReplies ?? 0),
      });
    }
    return [...sums.values()];
  }
}
