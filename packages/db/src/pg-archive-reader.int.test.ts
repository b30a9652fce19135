/** `PgArchiveReader` on Postgres: pages through a channel's archive in seq order, and reads its passes' durations. */
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgArchiveReader, passDurationsOf } from './pg-archive-reader.js';
import { PgChannelStore } from './pg-channel-store.js';
import { PgRunStore } from './pg-run-store.js';

let pg: FreshSchemaDb;
beforeAll(async () => {
  pg = await freshSchemaDb({ poolSize: 2 });
});
afterAll(async () => {
  await pg?.close();
});

describe('PgArchiveReader', () => {
  it('yields every message of the channel once, in seq order, across pages, with an ISO time', async () => {
    const store = new PgChannelStore({ db: pg.db });
    const key = 'web:reader';
    await store.append('web:other', {
      role: 'user',
      author: 'x',
      text: 'elsewhere',
      tokens: 5,
      contextTokens: 5,
    });
    const times = ['2026-11-26T10:00:00.000Z', '1764151200.000100', 'not a time', undefined];
    for (let i = 0; i < 11; i++) {
      const ts = times[i % times.length];
      await store.append(key, {
        role: i % 3 === 2 ? 'assistant' : 'user',
        author: `p${i}`,
        text: `message ${i}`,
        tokens: 5,
        contextTokens: 5,
        ...(ts === undefined ? {} : { ts }),
      });
    }
    await store.append(key, {
      role: 'assistant',
      author: 'ebb',
      text: '',
      tokens: 9,
      contextTokens: 9,
      toolCalls: [{ id: 'c1', name: 'search_history', arguments: '{}' }],
    });
    await store.append(key, {
      role: 'tool',
      author: 'search_history',
      text: '[]',
      tokens: 4,
      contextTokens: 4,
      toolCallId: 'c1',
    });

    const reader = new PgArchiveReader({ db: pg.db });
    const read = [];
    for await (const m of reader.messages(key, { batchSize: 4 })) read.push(m);
    expect(read.map((m) => m.seq)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(read.map((m) => m.text).slice(0, 3)).toEqual(['message 0', 'message 1', 'message 2']);
    expect(read[0]?.ts).toBe('2026-11-26T10:00:00.000Z');
    expect(read[1]?.ts).toBe('2025-11-26T10:00:00.000Z');
    // Neither a time nor absent: when it was archived.
    for (const m of [read[2], read[3]]) expect(Date.now() - Date.parse(m?.ts ?? '')).toBeLessThan(3_600_000);
    expect(read[11]?.toolCalls).toEqual([{ id: 'c1', name: 'search_history', arguments: '{}' }]);
    expect(read[12]).toMatchObject({ role: 'tool', toolCallId: 'c1' });
    expect(read[0]).not.toHaveProperty('toolCalls');
    expect(await reader.count(key)).toBe(13);
    expect(await reader.count(key, { since: new Date(Date.now() + 60_000) })).toBe(0);
    const none = [];
    for await (const m of reader.messages(key, { since: new Date(Date.now() + 60_000) })) none.push(m);
    expect(none).toEqual([]);
    expect(await reader.channelKeys()).toEqual(['web:other', 'web:reader']);
  });

  it('reads the median and the 90th percentile of the passes that ran their summarizer', async () => {
    const runs = new PgRunStore({ db: pg.db });
    const reader = new PgArchiveReader({ db: pg.db });
    const key = 'web:durations';
    expect(await reader.passDurations(key)).toEqual({ runs: 0, medianMs: null, slowMs: null });
    const durations = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1_000];
    const finished = [
      ...durations.map((durationMs) => ({ status: 'completed' as const, durationMs })),
      // Stale at the splice, after the summarizer ran: it counts.
      { status: 'stale' as const, durationMs: 1_000, outputTokens: 300 },
      // Failed, or stale before any model call: they do not.
      { status: 'failed' as const, durationMs: 99_000 },
      { status: 'stale' as const, durationMs: 99_000 },
    ];
    finished.splice(9, 1);
    for (const [i, outcome] of finished.entries()) {
      const jobId = `${key}-${i}`;
      await runs.create({
        jobId,
        channelKey: key,
        tier: 'background',
        usage: 0.8,
        fromSeq: 1,
        toSeq: 10,
        generation: 0,
      });
      await runs.finish(jobId, outcome);
    }
    expect(await reader.passDurations(key)).toEqual({ runs: 10, medianMs: 550, slowMs: 910 });
    // The dashboard reads the same figures from the runs it has read.
    expect(passDurationsOf(await runs.recent(key, 50))).toEqual({ runs: 10, medianMs: 550, slowMs: 910 });
  });
});
