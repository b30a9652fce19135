/**
 * Retention on Postgres: a channel with `retain_days = 30`, replayed with its messages' own times over
 * 60 days, compacted by real passes (the extractive summarizer, offline), with memories learned from
 * old and young messages. After one sweep no message older than 30 days keeps its text in any row
 * (the archive, spans active and retired, memories, run checkpoints), the young ones are untouched,
 * and a second sweep finds nothing to do.
 */

import { parseConfig } from '@ebb/config';
import { toNewMessage } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore, rowsOf } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { ExtractiveSummarizer, loadTokenizer } from '@ebb/llm';
import { createRedis, InProcessContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createCompactionProcessor } from './compaction-processor.js';
import { RetentionSweep } from './retention-sweep.js';
import { runCompactionWorker } from './run-worker.js';
import { TakeBackRunner } from './take-back-runner.js';

const KEY = 'slack:T1:CRETAIN';
const DAY = 86_400_000;
const START = Date.parse('2026-01-01T09:00:00Z');
/** The sweep's clock: 60 days after the first message. */
const NOW = START + 60 * DAY;
const CUTOFF = NOW - 30 * DAY;
const PER_DAY = 8;

let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
beforeAll(async () => {
  fresh = await freshSchemaDb();
});
afterAll(async () => {
  await fresh?.close();
});

/** Each message says its day in a word no other day uses (`dayword17`), so its copies can be found. */
const textOf = (day: number, i: number) =>
  `on dayword${day} item ${i}: the deploy of service ${day * 10 + i} passed its checks and the rollback drill is booked`;

it('takes back every message older than retain_days, from every row, once', async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  const channels = new PgChannelStore({ db: fresh.db });
  const memories = new PgMemoryStore({ db: fresh.db });
  const runs = new PgRunStore({ db: fresh.db });
  const summarizer = new ExtractiveSummarizer({ tokenizer });
  const settingsFor = async () => ({
    summaryMaxTokens: 600,
    memoryScope: 'channel' as const,
    tokenizer,
    summarizer,
  });
  for (let day = 0; day < 60; day++) {
    for (let i = 0; i < PER_DAY; i++) {
      const ts = new Date(START + day * DAY + i * 3_600_000).toISOString();
      await channels.append(KEY, {
        ...toNewMessage(
          { role: 'user', author: i % 2 ? 'ana' : 'bo', text: textOf(day, i), ts },
          tokenizer,
          1_000,
        ),
        platformMessageId: `p${day}-${i}`,
      });
    }
  }
  const notifier = new InProcessContextNotifier();
  const processor = createCompactionProcessor({
    channels,
    memories,
    runs,
    takeBacks: channels.takeBacks,
    notifier,
    settingsFor,
  });
  // Two passes: one wholly old (days 0–19), one across the cutoff (days 20–39).
  for (const [fromSeq, toSeq] of [
    [1, 20 * PER_DAY],
    [1, 40 * PER_DAY],
  ] as const) {
    const result = await processor({
      jobId: `pass-${toSeq}`,
      channelKey: KEY,
      tier: 'background',
      fromSeq,
      toSeq,
      generation: await channels.generation(KEY),
      attempt: 1,
    });
    expect(result).toMatchObject({ kind: 'completed' });
  }
  const seqOf = (day: number, i: number) => day * PER_DAY + i + 1;
  await memories.upsert([
    {
      type: 'fact',
      text: 'dayword3 deploy passed',
      importance: 0.5,
      scope: KEY,
      channelKey: KEY,
      fromSeq: seqOf(3, 1),
      toSeq: seqOf(3, 1),
    },
    {
      type: 'fact',
      text: 'dayword45 deploy passed',
      importance: 0.5,
      scope: KEY,
      channelKey: KEY,
      fromSeq: seqOf(45, 0),
      toSeq: seqOf(45, 2),
    },
  ]);

  const logger = new RecordingLogger();
  const runner = new TakeBackRunner({
    channels,
    memories,
    runs,
    takeBacks: channels.takeBacks,
    settingsFor,
    notifier,
    logger,
  });
  const swept: { channel: string; messages: number }[] = [];
  const sweep = new RetentionSweep({
    channels,
    takeBacks: channels.takeBacks,
    runner,
    retainDaysFor: (key) => (key === KEY ? 30 : undefined),
    tokenizerFor: async () => tokenizer,
    logger,
    onSwept: (s) => swept.push(s),
    now: () => NOW,
    batch: 100,
  });
  const old = 30 * PER_DAY;
  expect(await sweep.sweep()).toBe(old);
  await runner.idle();

  // The archive: the old are tombstones, the young untouched.
  const archive = await channels.readArchive(KEY, 1, 60 * PER_DAY);
  const times = await channels.archiveTimes(KEY, 0, 1_000);
  expect(times.filter((t) => t.at < CUTOFF).every((t) => t.taken)).toBe(true);
  expect(archive.slice(old).map((m) => m.text)).toEqual(
    Array.from({ length: 30 * PER_DAY }, (_, k) => textOf(30 + Math.floor(k / PER_DAY), k % PER_DAY)),
  );
  // Every row that could keep an old message's words: none does, for any old day.
  const holding = async (word: string) =>
    rowsOf<{ n: number }>(
      await fresh.db.execute(sql`select
        (select count(*) from messages t where t.channel_key = ${KEY} and t::text ~ ${`${word}([^0-9]|$)`})
        + (select count(*) from context_spans t where t.channel_key = ${KEY} and t::text ~ ${`${word}([^0-9]|$)`})
        + (select count(*) from memories t where t.channel_key = ${KEY} and t::text ~ ${`${word}([^0-9]|$)`})
        + (select count(*) from compaction_runs t where t.channel_key = ${KEY} and t::text ~ ${`${word}([^0-9]|$)`})
        as n`),
    )[0]?.n;
  for (let day = 0; day < 30; day++) expect(Number(await holding(`dayword${day}`)), `day ${day}`).toBe(0);
  expect(Number(await holding('dayword45'))).toBeGreaterThan(0);
  expect((await memories.list({ channelKey: KEY })).map((m) => m.text)).toEqual(['dayword45 deploy passed']);
  expect(logger.events('retention.swept')[0]?.fields).toMatchObject({ channel: KEY, messages: old });
  expect(logger.events('takeback.completed')[0]?.fields).toMatchObject({ kind: 'retention' });
  expect(swept).toEqual([{ channel: KEY, messages: old }]);
  expect(await channels.takeBacks.pendingTakeBacks(KEY)).toEqual([]);

  // Nothing is left to take back: the next sweep reads on from where this one stopped.
  expect(await sweep.sweep()).toBe(0);
});

it('runs in the compaction worker, where passes run: a worker sweeps at its start', async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  const key = 'slack:T1:CWORKER';
  const channels = new PgChannelStore({ db: fresh.db });
  const old = new Date(Date.now() - 40 * DAY).toISOString();
  const young = new Date(Date.now() - DAY).toISOString();
  for (const [i, ts] of [old, old, young].entries()) {
    await channels.append(key, {
      ...toNewMessage({ role: 'user', author: 'ana', text: `worker message ${i}`, ts }, tokenizer, 1_000),
      platformMessageId: `w${i}`,
    });
  }
  const prefix = randomPrefix();
  const config = parseConfig(`[channels."${key}".privacy]\nretain_days = 30\n`, 'retention.toml');
  const worker = await runCompactionWorker({
    config: () => config,
    env: {},
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger: new RecordingLogger(),
  });
  try {
    await vi.waitFor(
      async () =>
        expect((await channels.archiveTimes(key, 0, 10)).map((t) => t.taken)).toEqual([true, true, false]),
      { timeout: 20_000, interval: 100 },
    );
  } finally {
    await worker.close(5_000);
    const producer = createRedis(redisUrl(), { role: 'producer' });
    await waitForReady(producer);
    await cleanupPrefix(producer, prefix);
    await producer.quit();
  }
});
