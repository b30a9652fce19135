/**
 * What a channel has spent toward each of its limits (`[budget]`, the rules in `spend-limits.ts`),
 * from the usage every replica and worker records (`UsageStore`, Postgres's `llm_usage`): the bot
 * reads it before each answer of a limited channel, a worker before each of its passes (on the
 * cheaper model once a limit is reached), and `ebb status` shows it.
 *
 * A limit's spend is its period's closed hours (read once an hour per channel or workspace, and kept)
 * plus the hour under way (read every time: one indexed read per limit). A turn's usage counts once
 * recorded, which a limited channel's turn awaits; a pass's when its worker records it.
 */
import { LruMap } from '../support/lru-map.js';
import { type ModelPrice, pricedCost } from './pricing.js';
import {
  type BudgetSettings,
  limitsOf,
  periodOf,
  type SpendAgainstLimit,
  spendScopeOf,
} from './spend-limits.js';
import { hourOf, type UsageQuery, type UsageStore, type UsageTotals } from './usage.js';

/** Closed-hours totals kept: one per limit of a channel or workspace in use this hour. */
const CLOSED_HOURS_KEPT = 4_096;

export interface ChannelSpendOptions {
  readonly usage: Pick<UsageStore, 'totalsIn'>;
  /** `[prices]` now (a reload may change them). */
  readonly prices: () => Readonly<Record<string, ModelPrice>>;
}

export class ChannelSpend {
  readonly #options: ChannelSpendOptions;
  readonly #closed = new LruMap<string, number>(CLOSED_HOURS_KEPT);

  constructor(options: ChannelSpendOptions) {
    this.#options = options;
  }

  /**
   * Each limit `budget` sets, in `limitsOf`'s order, with what was spent toward it at `now`;
   * `untilReached` stops at the first reached (the one a verdict names: the rest need no read).
   */
  async againstLimits(
    channelKey: string,
    budget: BudgetSettings,
    now: number,
    { untilReached = false } = {},
  ): Promise<SpendAgainstLimit[]> {
    const spends: SpendAgainstLimit[] = [];
    for (const limit of limitsOf(budget)) {
      const { start, end } = periodOf(limit.period, now);
      const channel = spendScopeOf(channelKey, limit.scope);
      const spentUsd = await this.#spent(channel, start, now);
      spends.push({ ...limit, spentUsd, resetsAt: end });
      if (untilReached && spentUsd >= limit.limitUsd) break;
    }
    return spends;
  }

  /** USD spent from `start` to now: the closed hours as kept, and the hour under way as read now. */
  async #spent(channel: UsageQuery['channel'], start: Date, now: number): Promise<number> {
    const hour = hourOf(new Date(now));
    const key = JSON.stringify([channel, start.getTime(), hour.getTime()]);
    let closed = this.#closed.get(key);
    if (closed === undefined) {
      closed = this.#usd(await this.#options.usage.totalsIn({ from: start, to: hour, channel }));
      this.#closed.set(key, closed);
    }
    const open = await this.#options.usage.totalsIn({ from: hour, channel });
    return closed + this.#usd(open);
  }

  /** The calls' cost at `[prices]`; a model no longer priced counts nothing (config check refuses one in use). */
  #usd(rows: readonly UsageTotals[]): number {
    const prices = this.#options.prices();
    return rows.reduce((usd, r) => {
      const usage = { input: r.promptTokens, cached: r.cachedTokens, output: r.completionTokens };
      return usd + (pricedCost([{ model: r.model, usage }], prices).costUsd ?? 0);
    }, 0);
  }
}
