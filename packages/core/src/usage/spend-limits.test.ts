import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { threadParentOf } from '../model/platform.js';
import {
  budgetNotice,
  limitsOf,
  noticeKey,
  periodOf,
  reachedLimit,
  spendScopeOf,
  workspaceOf,
} from './spend-limits.js';

describe('periodOf', () => {
  it('is the UTC day or month, ending where the next begins', () => {
    const now = Date.parse('2026-12-31T23:59:59.999Z');
    expect(periodOf('day', now)).toEqual({
      start: new Date('2026-12-31T00:00:00Z'),
      end: new Date('2027-01-01T00:00:00Z'),
    });
    expect(periodOf('month', now)).toEqual({
      start: new Date('2026-12-01T00:00:00Z'),
      end: new Date('2027-01-01T00:00:00Z'),
    });
    expect(periodOf('month', Date.parse('2028-02-29T12:00:00Z')).end).toEqual(
      new Date('2028-03-01T00:00:00Z'),
    );
  });

  test.prop([
    fc.constantFrom('day' as const, 'month' as const),
    fc.integer({ min: 0, max: 4_102_444_800_000 }),
  ])('holds the instant, and the instant at its end starts the next period', (period, now) => {
    const { start, end } = periodOf(period, now);
    expect(start.getTime()).toBeLessThanOrEqual(now);
    expect(now).toBeLessThan(end.getTime());
    expect(periodOf(period, end.getTime()).start).toEqual(end);
    expect(periodOf(period, end.getTime() - 1).start).toEqual(start);
  });
});

describe('where a limit counts', () => {
  it('a workspace: the Slack team, the Discord guild, or the platform for the web; a DM is its own', () => {
    expect(workspaceOf('slack:T1:C1')).toBe('slack:T1:');
    expect(workspaceOf('slack:T1:C1:1700000000.1')).toBe('slack:T1:');
    expect(workspaceOf('discord:G1:C1:T9')).toBe('discord:G1:');
    expect(workspaceOf('web:ops')).toBe('web:');
    expect(workspaceOf('discord:dm:42')).toBeUndefined();
    expect(spendScopeOf('discord:dm:42', 'workspace')).toEqual({ withThreads: 'discord:dm:42' });
  });

  it("a channel: itself and its threads, a thread's limit its parent's", () => {
    expect(threadParentOf('slack:T1:C1:1700000000.1')).toBe('slack:T1:C1');
    expect(threadParentOf('discord:G1:C1:T9')).toBe('discord:G1:C1');
    expect(threadParentOf('web:ops')).toBe('web:ops');
    expect(spendScopeOf('slack:T1:C1:1700000000.1', 'channel')).toEqual({ withThreads: 'slack:T1:C1' });
    expect(spendScopeOf('slack:T1:C1', 'workspace')).toEqual({ keyPrefix: 'slack:T1:' });
  });
});

describe('reachedLimit', () => {
  const resetsAt = new Date('2026-12-05T00:00:00Z');
  it("names the first limit spent, the channel's before its workspace's", () => {
    const limits = limitsOf({ dailyUsd: 1, workspaceDailyUsd: 10, monthlyUsd: 5, over: 'notice' });
    expect(limits.map((l) => `${l.scope}/${l.period}`)).toEqual([
      'channel/day',
      'channel/month',
      'workspace/day',
    ]);
    const spends = limits.map((l, i) => ({ ...l, spentUsd: [0.5, 5, 12][i] ?? 0, resetsAt }));
    expect(reachedLimit(spends)).toMatchObject({ scope: 'channel', period: 'month', limitUsd: 5 });
    expect(reachedLimit(spends.map((s) => ({ ...s, spentUsd: 0 })))).toBeUndefined();
    expect(limitsOf({ over: 'silent' })).toEqual([]);
  });

  it('says in the notice which limit and when it resets', () => {
    const reached = {
      scope: 'workspace',
      period: 'month',
      limitUsd: 200,
      spentUsd: 200.1,
      resetsAt,
    } as const;
    expect(budgetNotice(reached)).toBe(
      "I've reached this workspace's monthly spending limit of $200.00, so I won't answer until 2026-12-05 00:00 UTC. Messages are still kept.",
    );
    expect(noticeKey('web:ops', reached)).toBe('web:ops|workspace|month');
  });
});
