/** The usage store's contract, against the in-memory reference and Postgres. */
import type { BudgetNotices, UsageStore, UsageTotals } from '@ebb/core';
import { InMemoryBudgetNotices, InMemoryUsageStore } from '@ebb/core/testing';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgBudgetNotices, PgUsageStore } from './pg-usage-store.js';

let pg: FreshSchemaDb;
beforeAll(async () => {
  pg = await freshSchemaDb({ poolSize: 4 });
});
afterAll(async () => {
  await pg?.close();
});

const turn = (channelKey: string, fields: Partial<UsageTotals> = {}): UsageTotals => ({
  channelKey,
  purpose: 'reply',
  model: 'gpt-5.4-mini',
  calls: 1,
  promptTokens: 2_000,
  cachedTokens: 1_792,
  completionTokens: 60,
  replies: 1,
  coldReplies: 0,
  ...fields,
});
const sorted = (rows: UsageTotals[]) =>
  [...rows].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe.each([
  ['in memory', () => new InMemoryUsageStore()],
  ['postgres', () => new PgUsageStore({ db: pg.db })],
] as const)('UsageStore (%s)', (_, make: () => UsageStore) => {
  it('adds up a channel’s calls per purpose and model, from the hour `since` falls in', async () => {
    const store = make();
    const key = `web:usage-${Math.random()}`;
    const other = `web:usage-other-${Math.random()}`;
    const now = new Date('2026-11-26T10:30:00Z');
    await store.record(turn(key), now);
    await store.record(
      turn(key, { promptTokens: 3_000, cachedTokens: 0, coldReplies: 1 }),
      new Date('2026-11-26T10:59:59Z'),
    );
    const pass = { purpose: 'summary', model: 'gpt-5.4-nano', cachedTokens: 0, replies: 0 } as const;
    await store.record(turn(key, pass), now);
    await store.record(turn(key), new Date('2026-11-25T09:00:00Z'));
    await store.record(turn(other), now);

    const totals = await store.totalsSince(new Date('2026-11-26T10:15:00Z'), [key]);
    expect(sorted(totals)).toEqual(
      sorted([
        turn(key, {
          calls: 2,
          promptTokens: 5_000,
          cachedTokens: 1_792,
          completionTokens: 120,
          replies: 2,
          coldReplies: 1,
        }),
        turn(key, pass),
      ]),
    );
    const day = await store.totalsSince(new Date('2026-11-25T00:00:00Z'), [key, other]);
    expect(day.find((r) => r.channelKey === key && r.purpose === 'reply')?.calls).toBe(3);
    expect(day.filter((r) => r.channelKey === other)).toHaveLength(1);
    expect(await store.totalsSince(now, [])).toEqual([]);
  });

  it('counts a record without reply counts (a pass’s) as none', async () => {
    const store = make();
    const key = `web:usage-${Math.random()}`;
    const { replies: _r, coldReplies: _c, ...pass } = turn(key, { purpose: 'summary' });
    await store.record(pass, new Date('2026-11-26T10:30:00Z'));
    const [row] = await store.totalsSince(new Date('2026-11-26T10:00:00Z'), [key]);
    expect(row).toMatchObject({ calls: 1, replies: 0, coldReplies: 0 });
  });

  it('adds up the hours of a period, of one channel or of every channel of a workspace', async () => {
    const store = make();
    const team = `slack:T${Math.random().toString(36).slice(2)}:`;
    const [a, b, thread] = [`${team}C1`, `${team}C2`, `${team}C1:1700000000.1`];
    await store.record(turn(a), new Date('2026-11-30T23:59:00Z'));
    await store.record(turn(a), new Date('2026-12-01T00:10:00Z'));
    await store.record(turn(b), new Date('2026-12-01T05:00:00Z'));
    await store.record(turn(thread), new Date('2026-12-01T06:00:00Z'));
    await store.record(turn(a), new Date('2026-12-02T00:00:00Z'));
    // Another team whose id starts like this one's: not in the workspace.
    await store.record(turn(`${team.slice(0, -1)}X:C1`), new Date('2026-12-01T05:00:00Z'));
    const day = { from: new Date('2026-12-01T00:00:00Z'), to: new Date('2026-12-02T00:00:00Z') };
    const calls = (rows: UsageTotals[]) => rows.reduce((n, r) => n + r.calls, 0);
    expect(calls(await store.totalsIn({ ...day, channel: { key: a } }))).toBe(1);
    // The channel and its thread, not a channel whose id starts alike.
    await store.record(turn(`${a}2`), new Date('2026-12-01T05:00:00Z'));
    expect(calls(await store.totalsIn({ ...day, channel: { withThreads: a } }))).toBe(2);
    expect(calls(await store.totalsIn({ ...day, channel: { keyPrefix: team } }))).toBe(4);
    expect(calls(await store.totalsIn({ from: day.from, channel: { keyPrefix: team } }))).toBe(5);
    // From an hour's start up to (not including) another's.
    const hours = { from: new Date('2026-12-01T05:30:00Z'), to: new Date('2026-12-01T06:00:00Z') };
    expect(calls(await store.totalsIn({ ...hours, channel: { keyPrefix: team } }))).toBe(2);
  });
});

describe.each([
  ['in memory', () => new InMemoryBudgetNotices()],
  ['postgres', () => new PgBudgetNotices({ db: pg.db })],
] as const)('BudgetNotices (%s)', (_, make: () => BudgetNotices) => {
  it('records a limit reached once a period, whoever records it', async () => {
    const [first, second] = [make(), make()];
    const key = `web:budget-${Math.random()}|channel|day`;
    const day = new Date('2026-12-01T00:00:00Z');
    const at = new Date('2026-12-01T12:00:00Z');
    const claims = await Promise.all([first.claim(key, day, at), first.claim(key, day, at)]);
    expect(claims.sort()).toEqual([false, true]);
    // Another store over the same rows (a replica, a restart) finds it recorded; the in-memory one is its own.
    if (first instanceof PgBudgetNotices) expect(await second.claim(key, day, at)).toBe(false);
    expect(await first.claim(key, new Date('2026-12-02T00:00:00Z'), at)).toBe(true);
    // Taken back (its notice could not be posted): the next claim is the first again.
    await first.release(key, day);
    expect(await first.claim(key, day, at)).toBe(true);
  });
});
