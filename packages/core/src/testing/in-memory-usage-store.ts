import {
  type BudgetNotices,
  hourOf,
  type UsageQuery,
  type UsageStore,
  type UsageTotals,
} from '../usage/usage.js';

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
    return this.#sums((row) => row.hour >= from && (!wanted || wanted.has(row.channelKey)));
  }

  async totalsIn({ from, to, channel }: UsageQuery): Promise<UsageTotals[]> {
    const [start, end] = [hourOf(from).getTime(), to?.getTime() ?? Number.POSITIVE_INFINITY];
    const ofChannel = (key: string) =>
      'key' in channel
        ? key === channel.key
        : 'withThreads' in channel
          ? key === channel.withThreads || key.startsWith(`${channel.withThreads}:`)
          : key.startsWith(channel.keyPrefix);
    return this.#sums((row) => row.hour >= start && row.hour < end && ofChannel(row.channelKey));
  }

  #sums(wanted: (row: UsageTotals & { readonly hour: number }) => boolean): UsageTotals[] {
    const sums = new Map<string, UsageTotals>();
    for (const row of this.#rows.values()) {
      if (!wanted(row)) continue;
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

/** Notices recorded in memory: the reference for the Postgres store, and tests. */
export class InMemoryBudgetNotices implements BudgetNotices {
  readonly #claimed = new Set<string>();

  async claim(noticeKey: string, periodStart: Date): Promise<boolean> {
    const key = `${noticeKey}@${periodStart.toISOString()}`;
    if (this.#claimed.has(key)) return false;
    this.#claimed.add(key);
    return true;
  }

  async release(noticeKey: string, periodStart: Date): Promise<void> {
    this.#claimed.delete(`${noticeKey}@${periodStart.toISOString()}`);
  }
}
