/**
 * Whether a channel has reached a spend limit (`[budget]`; the rules are core's `spend-limits.ts`),
 * read before each answer from the usage every replica and worker records (`llm_usage`), so a
 * limit holds across replicas and restarts. This says which limit, and whether this replica is the
 * first to see it in its period (it sends the channel's one notice and logs `budget.reached`); what
 * that leaves of the answer is `limitedAnswer`'s, which `message-turns.ts` carries out.
 * How a limit's spend is read is core's `channel-spend.ts`'s (`ebb status` shows it too).
 */
import {
  type BudgetNotices,
  type BudgetSettings,
  budgetNotice,
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
import type { Turn } from './turn.js';

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
  /** Takes the record back (the notice could not be posted), so the next message gets it. */
  release(): Promise<void>;
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
    const key = noticeKey(channelKey, reached);
    const first = await this.#options.notices.claim(key, period.start, new Date(now));
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
    return { reached, first, release: () => this.#options.notices.release(key, period.start) };
  }
}

/**
 * What a reached spend limit leaves of a turn's answer: the notice to post (with the way to take its
 * record back if the post fails), no answer, or the model to answer on.
 */
export type LimitedAnswer =
  | { readonly notice: string; readonly release: () => Promise<void> }
  | { readonly none: true }
  | { readonly model: string };

/**
 * What the limit the channel has reached leaves of the answer (undefined: none reached, no limit
 * set, or the spend could not be read, which is logged and answered as usual): `over = "notice"`
 * posts the period's one notice (the replica that records the limit first) and then nothing,
 * `"silent"` nothing, `"cheaper_model"` answers on that model.
 */
export async function limitedAnswer(
  budgets: ChannelBudgets | undefined,
  turn: Pick<Turn, 'key' | 'settings' | 'log'>,
  onBudget: BotOptions['onBudget'],
): Promise<LimitedAnswer | undefined> {
  const { budget } = turn.settings;
  if (!budget.limited || budgets === undefined) return undefined;
  // A spend that cannot be read is no reason to leave a message unanswered: it is answered, and said.
  const hit = await budgets.reached(turn.key, budget, turn.log).catch((err: unknown) => {
    turn.log.warn({ event: 'budget.check_failed', err }, 'could not read the spend; answering as usual');
    return undefined;
  });
  if (hit === undefined) return undefined;
  const { scope, period } = hit.reached;
  onBudget?.({ over: budget.over, scope, period, first: hit.first });
  if (budget.over === 'cheaper_model' && budget.cheaperModel !== undefined)
    return { model: budget.cheaperModel };
  if (budget.over === 'notice' && hit.first)
    return { notice: budgetNotice(hit.reached), release: hit.release };
  return { none: true };
}
