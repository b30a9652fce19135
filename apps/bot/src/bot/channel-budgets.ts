/**
 * Whether a channel has reached a spend limit (`[budget]`; the rules are core's `spend-limits.ts`),
 * read before each answer from the usage every replica and worker records (`llm_usage`), so a
 * limit holds across replicas and restarts. What a reached limit does to the turn is
 * `message-turns.ts`'s; this says which limit, and whether this replica is the first to see it in
 * its period (it sends the channel's one notice and logs `budget.reached`).
 * How a limit's spend is read is core's `channel-spend.ts`'s (`ebb status` shows it too).
 */
import {
  type BudgetNotices,
  type BudgetSettings,
  ChannelSpend,
  type Logger,
  type ModelPrice,
  noticeKey,
  periodOf,
  reachedLimit,
  type SpendAgainstLimit,
  type UsageStore,
} from '@ebb/core';
import type { BotOptions } from './bot-options.js';

/** The bot's budgets, when it has the usage and the notices to keep them by. */
export function channelBudgets(
  options: Pick<BotOptions, 'config' | 'usage' | 'budgetNotices' | 'now'>,
): ChannelBudgets | undefined {
  const { usage, budgetNotices: notices, config } = options;
  if (usage === undefined || notices === undefined) return undefined;
  return new ChannelBudgets({ usage, notices, prices: () => config().prices, now: options.now ?? Date.now });
}

export interface ChannelBudgetsOptions {
  readonly usage: UsageStore;
  readonly notices: BudgetNotices;
  /** `[prices]` now (a reload may change them). */
  readonly prices: () => Readonly<Record<string, ModelPrice>>;
  readonly now: () => number;
}

/** A limit reached: which, and whether this replica recorded it first this period. */
export interface BudgetReached {
  readonly reached: SpendAgainstLimit;
  readonly first: boolean;
}

export class ChannelBudgets {
  readonly #options: ChannelBudgetsOptions;
  readonly #spend: ChannelSpend;

  constructor(options: ChannelBudgetsOptions) {
    this.#options = options;
    this.#spend = new ChannelSpend(options);
  }

  /** The limit `channelKey` has reached under `budget`, or undefined while every limit has room. */
  async reached(channelKey: string, budget: BudgetSettings, log: Logger): Promise<BudgetReached | undefined> {
    const now = this.#options.now();
    const spends = await this.#spend.againstLimits(channelKey, budget, now, { untilReached: true });
    const reached = reachedLimit(spends);
    if (reached === undefined) return undefined;
    const period = periodOf(reached.period, now);
    const first = await this.#options.notices.claim(
      noticeKey(channelKey, reached),
      period.start,
      new Date(now),
    );
    if (first)
      log.warn(
        {
          event: 'budget.reached',
          scope: reached.scope,
          period: reached.period,
          limitUsd: reached.limitUsd,
          spentUsd: Math.round(reached.spentUsd * 1e6) / 1e6,
          resetsAt: reached.resetsAt.toISOString(),
          over: budget.over,
        },
        `reached the ${reached.scope}'s ${reached.period === 'day' ? 'daily' : 'monthly'} spend limit`,
      );
    return { reached, first };
  }
}
