/**
 * Retention on real chat and its real clock: 400 messages of the #ubuntu transcript over ten days
 * between 2006-12-06 and 2007-02-15 (`@ebb/testing/transcript-sample`), archived with their own
 * times, compacted by real passes through the fake OpenAI server playing a careless model (its
 * summaries repeat the lines it saw, its memories quote them), then swept by the compaction worker
 * (`runCompactionWorker`, on real Postgres and Redis) with `retain_days = 30` on a clock set to the
 * day after the last message. Afterwards no word that only the old messages used is in any row
 * (messages, spans active and retired, memories, run checkpoints) or any Redis value of the worker's
 * prefix, and the young messages are as they were said.
 */
import { parseConfig } from '@ebb/config';
import { toNewMessage } from '@ebb/core';
import { PgChannelStore, rowsOf } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createRedis, InProcessContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { readTranscriptSample } from '@ebb/testing/transcript-sample';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createPostgresPipeline } from './postgres-pipeline.js';
import { runCompactionWorker } from './run-worker.js';

const KEY = 'slack:T1:CUBUNTU';
const DAY = 86_400_000;
const NOW = Date.parse('2007-02-16T00:00Z');
const CUTOFF = NOW - 30 * DAY;

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
const prefix = randomPrefix();
const redis = createRedis(redisUrl(), { role: 'producer' });

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(carelessModel);
  fresh = await freshSchemaDb();
  await waitForReady(redis);
});

afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  await redis.quit();
  await fresh?.close();
  await fake?.close();
});

/** Summarizes by repeating the start of each line it saw; remembers its first three lines word for word. */
function carelessModel(request: RecordedRequest) {
  const input = request.body.messages.map((m: { content?: unknown }) => String(m.content ?? '')).join('\n');
  const lines = [...input.matchAll(/^\[#(\d+)\] ([^\n]*)$/gm)].map((m) => ({
    seq: Number(m[1]),
    text: m[2],
  }));
  return {
    json: {
      summary: lines.map((l) => (l.text ?? '').slice(0, 60)).join('\n'),
      memories: lines.slice(0, 3).map((l) => ({
        type: 'fact',
        text: l.text,
        importance: 0.6,
        fromSeq: l.seq,
        toSeq: l.seq,
      })),
    },
  };
}

/** Lower-cased words of 7 letters or more. */
const wordsOf = (text: string) => text.toLowerCase().match(/[a-z][a-z0-9_-]{6,}/g) ?? [];

it('a worker sweeping retain_days = 30 leaves no word only the old messages used, anywhere', async () => {
  const transcript = readTranscriptSample();
  const tokenizer = await loadTokenizer('o200k_base');
  const channels = new PgChannelStore({ db: fresh.db });
  for (const [i, line] of transcript.entries()) {
    await channels.append(KEY, {
      ...toNewMessage({ ...line, ts: `${line.ts}Z` }, tokenizer, 1_000),
      platformMessageId: `irc-${i}`,
    });
  }
  const isOld = (line: { ts: string }) => Date.parse(`${line.ts}Z`) < CUTOFF;
  const old = transcript.filter(isOld);
  const young = transcript.filter((l) => !isOld(l));
  expect([old.length, young.length]).toEqual([160, 240]);

  const toml = `[llm]\nbase_url = "${fake.url}"\n[compaction]\nsummary_max_tokens = 4000\n[privacy]\nretain_days = 30\n`;
  const config = parseConfig(toml, 'retention-transcript.toml');
  const { processor } = createPostgresPipeline({
    config: () => config,
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    notifier: new InProcessContextNotifier(),
  });
  // One pass over old messages only, then one across the cutoff that folds it (retired, text kept).
  for (const toSeq of [120, 240]) {
    const result = await processor({
      jobId: `pass-${toSeq}`,
      channelKey: KEY,
      tier: 'background',
      fromSeq: 1,
      toSeq,
      generation: await channels.generation(KEY),
      attempt: 1,
    });
    expect(result, JSON.stringify(result)).toMatchObject({ kind: 'completed' });
  }

  // Words only old messages used (and so, before the sweep, in the rows their copies are in).
  // A tombstone keeps who spoke and when (docs/forgetting.md): the speakers' names are not counted.
  const youngText = young.map((l) => l.text.toLowerCase()).join('\n');
  const names = transcript.map((l) => l.author.toLowerCase()).join('\n');
  const oldOnly = [...new Set(old.flatMap((l) => wordsOf(l.text)))].filter(
    (w) => !youngText.includes(w) && !names.includes(w),
  );
  const everything = async () =>
    rowsOf<{ t: string }>(
      await fresh.db.execute(sql`
        select t::text as t from messages t where t.channel_key = ${KEY}
        union all select t::text from context_spans t where t.channel_key = ${KEY}
        union all select t::text from memories t where t.channel_key = ${KEY}
        union all select t::text from compaction_runs t where t.channel_key = ${KEY}`),
    )
      .map((r) => r.t.toLowerCase())
      .join('\n');
  const before = await everything();
  const inSummariesBefore = oldOnly.filter((w) => before.split(w).length > 2);
  expect(oldOnly.length).toBeGreaterThan(50);
  // The check can see a copy: most of those words were in a summary or a memory too.
  expect(inSummariesBefore.length).toBeGreaterThan(20);

  const logger = new RecordingLogger();
  const worker = await runCompactionWorker({
    config: () => config,
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger,
    now: () => NOW,
  });
  try {
    await vi.waitFor(
      () =>
        expect(logger.events('takeback.completed').map((e) => e.fields)).toContainEqual(
          expect.objectContaining({ channel: KEY, kind: 'retention' }),
        ),
      { timeout: 30_000, interval: 100 },
    );
  } finally {
    await worker.close(5_000);
  }

  expect(logger.events('retention.swept')[0]?.fields).toMatchObject({ channel: KEY, messages: old.length });
  const after = await everything();
  const leaks = oldOnly.filter((w) => after.includes(w));
  expect(leaks).toEqual([]);
  const values: string[] = [];
  for (const key of await redis.keys(`${prefix}*`))
    values.push(String(await redis.dumpBuffer(key)).toLowerCase());
  expect(oldOnly.filter((w) => values.some((v) => v.includes(w)))).toEqual([]);
  // The young are as they were said.
  const archive = await channels.readArchive(KEY, old.length + 1, transcript.length);
  expect(archive.map((m) => m.text)).toEqual(young.map((l) => l.text));
  expect(await channels.takeBacks.pendingTakeBacks(KEY)).toEqual([]);
}, 90_000);
