/**
 * `UsageStore` on Postgres (or PGlite): one `llm_usage` row per channel, hour, purpose and model,
 * each record added to its row in one upsert. `PgBudgetNotices`: the spend limits reached, one row
 * per limit and period, inserted once.
 */
import { type BudgetNotices, hourOf, type UsageQuery, type UsageStore, type UsageTotals } from '@ebb/core';
import { and, eq, gte, inArray, lt, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { dbCall } from './pg-errors.js';
import { budgetNotices, llmUsage } from './schema.js';

export class PgUsageStore implements UsageStore {
  readonly #db: EbbDatabase;

  constructor(options: { readonly db: EbbDatabase }) {
    this.#db = options.db;
  }

  async record(usage: UsageTotals, at: Date): Promise<void> {
    await dbCall('recordUsage', () =>
      this.#db
        .insert(llmUsage)
        .values({ ...usage, hour: hourOf(at) })
        .onConflictDoUpdate({
          target: [llmUsage.channelKey, llmUsage.hour, llmUsage.purpose, llmUsage.model],
          set: {
            calls: sql`${llmUsage.calls} + excluded.calls`,
            promptTokens: sql`${llmUsage.promptTokens} + excluded.prompt_tokens`,
            cachedTokens: sql`${llmUsage.cachedTokens} + excluded.cached_tokens`,
            completionTokens: sql`${llmUsage.completionTokens} + excluded.completion_tokens`,
            replies: sql`${llmUsage.replies} + excluded.replies`,
            coldReplies: sql`${llmUsage.coldReplies} + excluded.cold_replies`,
          },
        }),
    );
  }

  async totalsSince(since: Date, channelKeys?: readonly string[]): Promise<UsageTotals[]> {
    if (channelKeys !== undefined && channelKeys.length === 0) return [];
    return await this.#totals(
      'usageTotals',
      and(
        gte(llmUsage.hour, hourOf(since)),
        channelKeys === undefined ? undefined : inArray(llmUsage.channelKey, [...channelKeys]),
      ),
    );
  }

  /** One channel's hours through the primary key; a workspace's through the hour index. */
  async totalsIn({ from, to, channel }: UsageQuery): Promise<UsageTotals[]> {
    return await this.#totals(
      'usageTotalsIn',
      and(
        'key' in channel
          ? eq(llmUsage.channelKey, channel.key)
          : 'withThreads' in channel
            ? sql`(${llmUsage.channelKey} = ${channel.withThreads} or starts_with(${llmUsage.channelKey}, ${`${channel.withThreads}:`}))`
            : sql`starts_with(${llmUsage.channelKey}, ${channel.keyPrefix})`,
        gte(llmUsage.hour, hourOf(from)),
        to === undefined ? undefined : lt(llmUsage.hour, to),
      ),
    );
  }

  async #totals(call: string, where: SQL | undefined): Promise<UsageTotals[]> {
    const rows = await dbCall(call, () =>
      this.#db
        .select({
          channelKey: llmUsage.channelKey,
          purpose: llmUsage.purpose,
          model: llmUsage.model,
          calls: sql<number>`sum(${llmUsage.calls})::int`,
          promptTokens: sql<number>`sum(${llmUsage.promptTokens})::bigint`,
          cachedTokens: sql<number>`sum(${llmUsage.cachedTokens})::bigint`,
          completionTokens: sql<number>`sum(${llmUsage.completionTokens})::bigint`,
          replies: sql<number>`sum(${llmUsage.replies})::int`,
          coldReplies: sql<number>`sum(${llmUsage.coldReplies})::int`,
        })
        .from(llmUsage)
        .where(where)
        .groupBy(llmUsage.channelKey, llmUsage.purpose, llmUsage.model),
    );
    // Sums come back as strings from pg's bigint; counts of tokens fit a double.
    return rows.map((r) => ({
      ...r,
      calls: Number(r.calls),
      promptTokens: Number(r.promptTokens),
      cachedTokens: Number(r.cachedTokens),
      completionTokens: Number(r.completionTokens),
      replies: Number(r.replies),
      coldReplies: Number(r.coldReplies),
    }));
  }
}

export class PgBudgetNotices implements BudgetNotices {
  readonly #db: EbbDatabase;

  constructor(options: { readonly db: EbbDatabase }) {
    this.#db = options.db;
  }

  async claim(noticeKey: string, periodStart: Date, at: Date): Promise<boolean> {
    const inserted = await dbCall('claimBudgetNotice', () =>
      this.#db
        .insert(budgetNotices)
        .values({ noticeKey, periodStart, reachedAt: at })
        .onConflictDoNothing()
        .returning({ noticeKey: budgetNotices.noticeKey }),
    );
    return inserted.length > 0;
  }

  async release(noticeKey: string, periodStart: Date): Promise<void> {
    await dbCall('releaseBudgetNotice', () =>
      this.#db
        .delete(budgetNotices)
        .where(and(eq(budgetNotices.noticeKey, noticeKey), eq(budgetNotices.periodStart, periodStart))),
    );
  }
}
