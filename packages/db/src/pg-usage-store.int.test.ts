/** The usage store's contract, against the in-memory reference and Postgres. */
import type { UsageStore, UsageTotals } from '@ebb/core';
import { InMemoryUsageStore } from '@ebb/core/testing';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgUsageStore } from './pg-usage-store.js';

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
});
