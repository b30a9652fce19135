/**
 * Redis lost under a running pass, on the real worker (BullMQ, Postgres, a `redis-server` of the
 * test's own): killed while the summarizer works, so the pass splices and is recorded in Postgres
 * with Redis away, then started again empty. What Redis could not do after that (the context-changed
 * notice, BullMQ's own moves of a job it no longer has) must not label the pass failed.
 */
import { measureMessage } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { BullmqCompactionQueue, closeRedis, createRedis, waitForReady } from '@ebb/queue';
import { DisposableRedis, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, expect, it, vi } from 'vitest';
import { FAST_RETRY, pipelineConfig } from '../test/pipeline-flows.js';
import { runCompactionWorker } from './run-worker.js';

const WAIT = { timeout: 20_000, interval: 20 };
const KEY = 'web:redis-loss';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
}, 30_000);

it('keeps a pass that completed in Postgres completed when Redis dies before its notice', async () => {
  const redis = await DisposableRedis.start();
  closers.push(() => redis.kill());
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());
  const fake = await FakeOpenAiServer.start();
  closers.push(() => fake.close());
  // Redis dies while the model writes the summary: everything after it runs with Redis away.
  fake.reply(async () => {
    await redis.kill();
    return { json: { summary: 'Ana and Bo rotated the keys.', memories: [] } };
  });

  const channels = new PgChannelStore({ db: fresh.db });
  const tokenizer = await loadTokenizer('o200k_base');
  for (let i = 0; i < 30; i++) {
    const { entry, archivedTokens } = measureMessage(
      { seq: 0, role: 'user', author: i % 2 ? 'ana' : 'bo', text: `update ${i}: rotating keys` },
      tokenizer,
      1_000,
    );
    await channels.append(KEY, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
  }
  const prefix = randomPrefix();
  const producer = createRedis(redis.url, { role: 'producer' });
  closers.push(() => closeRedis(producer));
  await waitForReady(producer);
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  closers.push(() => queue.close());
  const runs = new PgRunStore({ db: fresh.db });
  const job = { channelKey: KEY, tier: 'background' as const, fromSeq: 1, toSeq: 20, generation: 0 };
  const { jobId } = await queue.enqueue(job);
  await runs.create({ ...job, jobId, usage: 0.8 });

  const logger = new RecordingLogger();
  const worker = await runCompactionWorker({
    config: () => pipelineConfig(fake.url),
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    redisUrl: redis.url,
    redisPrefix: prefix,
    logger,
    retry: FAST_RETRY,
  });
  let closed = false;
  closers.push(async () => {
    if (closed) return;
    await redis.restart().catch(() => {});
    await worker.close(5_000);
  });

  const outcome = await vi.waitFor(() => {
    const [line] = [...logger.events('compaction.completed'), ...logger.events('compaction.failed')];
    if (!line) throw new Error('the pass has not ended yet');
    return line.fields;
  }, WAIT);
  expect(outcome).toMatchObject({ event: 'compaction.completed', jobId, error: 'redis_unavailable' });
  expect(await runs.get(jobId)).toMatchObject({ status: 'completed' });
  const context = await channels.loadContext(KEY);
  expect(context.spans.filter((s) => s.kind === 'summary' && s.jobId === jobId)).toHaveLength(1);

  // Redis back without the job: each of BullMQ's moves of it fails there (to completed, then to
  // failed or delayed). Said once, as what it is; the run stays completed.
  await redis.restart();
  await vi.waitFor(() => expect(logger.events('queue.job_vanished')).not.toEqual([]), WAIT);
  // A graceful close waits for BullMQ's handling of the job to end: every move it tried is logged.
  closed = true;
  await worker.close(5_000);
  expect(logger.events('queue.job_vanished')).toEqual([
    expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ channel: KEY, jobId }) }),
  ]);
  expect(logger.entries.filter((e) => e.level === 'error')).toEqual([]);
  expect(logger.events('compaction.failed')).toEqual([]);
  expect(await runs.get(jobId)).toMatchObject({ status: 'completed' });
}, 60_000);
