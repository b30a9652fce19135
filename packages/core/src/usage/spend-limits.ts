/**
 * Spend limits (`[budget]`), the rules without the reads: the periods a limit counts over (the UTC day
 * and the UTC month, each ending when the next begins), the workspace a channel's spend also counts
 * toward, which limit a channel has reached, and the notice it gets. `channel-spend.ts` reads the
 * spend; the bot acts on the verdict (`apps/bot/src/bot/channel-budgets.ts`), and so does a worker's
 * pass (the cheaper model). Nothing here reads a clock.
 *
 * | limit                   | counts                                              | resets           |
 * | ----------------------- | --------------------------------------------------- | ---------------- |
 * | `daily_usd`             | the channel's model calls (replies, passes), threads too | 00:00 UTC   |
 * | `monthly_usd`           | the same, over the month                            | the 1st, 00:00 UTC |
 * | `workspace_daily_usd`   | every channel of its workspace (`workspaceOf`)      | 00:00 UTC        |
 * | `workspace_monthly_usd` | the same, over the month                            | the 1st, 00:00 UTC |
 */

import { threadParentOf } from '../model/platform.js';

/** What happens to a message once a limit is reached: the turn is archived either way. */
export const BUDGET_OVER = ['notice', 'cheaper_model', 'silent'] as const;
export type BudgetOver = (typeof BUDGET_OVER)[number];

/** A channel's limits in USD (absent: none) and what reaching one does. */
export interface BudgetSettings {
  readonly dailyUsd?: number;
  readonly monthlyUsd?: number;
  readonly workspaceDailyUsd?: number;
  readonly workspaceMonthlyUsd?: number;
  readonly over: BudgetOver;
  /** The model `over = "cheaper_model"` answers on. */
  readonly cheaperModel?: string;
}

export type SpendPeriod = 'day' | 'month';
export type SpendScope = 'channel' | 'workspace';

/** A period's bounds: from `start` (inclusive) to `end`, when the next begins. */
export interface PeriodBounds {
  readonly start: Date;
  readonly end: Date;
}

/** The UTC day or month `now` falls in. */
export function periodOf(period: SpendPeriod, now: number): PeriodBounds {
  const at = new Date(now);
  const [y, m, d] = [at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()];
  return period === 'day'
    ? { start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) }
    : { start: new Date(Date.UTC(y, m, 1)), end: new Date(Date.UTC(y, m + 1, 1)) };
}

/**
 * The key prefix every channel of `channelKey`'s workspace shares: a Slack team (`slack:T1:`), a
 * Discord guild (`discord:G1:`), and the web channel as one (`web:`); threads count toward their
 * team too. A Discord DM (`discord:dm:<channel>`) belongs to no guild: undefined, it is its own
 * workspace (see `spendScopeOf`), so one person's DMs cannot spend everyone's.
 */
export function workspaceOf(channelKey: string): string | undefined {
  const [platform, workspace] = channelKey.split(':');
  if (platform === 'discord' && workspace === 'dm') return undefined;
  if (platform === 'slack' || platform === 'discord') return `${platform}:${workspace ?? ''}:`;
  return `${platform ?? ''}:`;
}

/** The channels whose calls a limit of `scope` counts, for a turn in `channelKey`. */
export function spendScopeOf(
  channelKey: string,
  scope: SpendScope,
): { readonly withThreads: string } | { readonly keyPrefix: string } {
  const workspace = scope === 'workspace' ? workspaceOf(channelKey) : undefined;
  return workspace === undefined ? { withThreads: threadParentOf(channelKey) } : { keyPrefix: workspace };
}

/** One limit of a channel, with what has been spent toward it this period. */
export interface SpendAgainstLimit {
  readonly scope: SpendScope;
  readonly period: SpendPeriod;
  readonly limitUsd: number;
  readonly spentUsd: number;
  readonly resetsAt: Date;
}

/** The limits `limits` sets, in the order a verdict names them: the channel's before its workspace's, a day before a month. */
export function limitsOf(
  limits: BudgetSettings,
): { scope: SpendScope; period: SpendPeriod; limitUsd: number }[] {
  const all = [
    { scope: 'channel', period: 'day', limitUsd: limits.dailyUsd },
    { scope: 'channel', period: 'month', limitUsd: limits.monthlyUsd },
    { scope: 'workspace', period: 'day', limitUsd: limits.workspaceDailyUsd },
    { scope: 'workspace', period: 'month', limitUsd: limits.workspaceMonthlyUsd },
  ] as const;
  return all.flatMap((l) => (l.limitUsd === undefined ? [] : [{ ...l, limitUsd: l.limitUsd }]));
}

/**
 * The limit a channel has reached (spent at least its USD), the first in `limitsOf`'s order when
 * several are; undefined while every one has room.
 */
export function reachedLimit(spends: readonly SpendAgainstLimit[]): SpendAgainstLimit | undefined {
  return spends.find((s) => s.spentUsd >= s.limitUsd);
}

/** When a limit resets, as every view says it: `2026-12-05 00:00 UTC` (a period starts on the minute). */
export function resetText(resetsAt: Date): string {
  return `${resetsAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The one message a channel gets when it reaches a limit (`over = "notice"`). */
export function budgetNotice(reached: SpendAgainstLimit): string {
  const whose = reached.scope === 'channel' ? "this channel's" : "this workspace's";
  const period = reached.period === 'day' ? 'daily' : 'monthly';
  return `I've reached ${whose} ${period} spending limit of $${reached.limitUsd.toFixed(2)}, so I won't answer until ${resetText(reached.resetsAt)}. Messages are still kept.`;
}

/** A notice's identity: one per channel, limit and period, however many replicas see the channel reach it. */
export function noticeKey(channelKey: string, reached: Pick<SpendAgainstLimit, 'scope' | 'period'>): string {
  return `${channelKey}|${reached.scope}|${reached.period}`;
}
