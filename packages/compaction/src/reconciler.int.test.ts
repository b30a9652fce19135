/**
 * Stuck runs on the real stack (Postgres, Redis, BullMQ): a run whose job Redis lost is enqueued
 * again and completes; a run whose job failed unrecorded is marked failed; a run lost long ago is
 * marked stale; a run whose job waits is left alone.
 */
import { Writable } from 'node:stream';
import { resolveChannel } from '@ebb/config';
import {
  ChannelCompactor,
  type CompactionJob,
  type CompactionLogEvent,
  chatMessageTokens,
  EbbError,
  measureMessage,
  TRUNCATION_MARKER,
  UNCALIBRATED,
} from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, startCompactionWorker, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { compactorSettingsFor, FAST_RETRY, pipelineConfig } from '../test/pipeline-flows.js';
import { reconcileRuns } from './reconciler.js';
import { runCompactionWorker } from './run-worker.js';

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
const producer = createRedis(redisUrl(), { role: 'producer' });
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(() => ({ json: { summary: 'Ana and Bo rotated the keys.', memories: [] } }));
  fresh = await freshSchemaDb();
  await waitForReady(producer);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await producer.quit();
  await fresh.close();
  await fake.close();
});

function queueOn(prefix: string): BullmqCompactionQueue {
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  cleanups.push(async () => {
    await queue.close();
    await cleanupPrefix(producer, prefix);
  });
  return queue;
}

/** Chats in `channelKey` until the bot side enqueues a pass (no worker runs): its job id. */
async function chatUntilPass(channelKey: string, queue: BullmqCompactionQueue): Promise<string> {
  const config = pipelineConfig(fake.url);
  const channel = resolveChannel(config, channelKey);
  const tokenizer = await loadTokenizer(channel.llm.encoding);
  const channels = new PgChannelStore({ db: fresh.db });
  const compactor = new ChannelCompactor({
    channels,
    runs: new PgRunStore({ db: fresh.db }),
    queue,
    markerTokens: chatMessageTokens(tokenizer, TRUNCATION_MARKER),
  });
  const settings = compactorSettingsFor(channel, tokenizer);
  for (let i = 0; i < 400; i++) {
    const { entry, archivedTokens } = measureMessage(
      {
        seq: 0,
        role: 'user',
        author: i % 2 ? 'ana' : 'bo',
        text: `update ${i}: rotating keys, ticket SEC-${i}`,
      },
      tokenizer,
      channel.compaction.messageMaxTokens,
    );
    await channels.append(channelKey, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
    const { jobId } = await compactor.afterTurn(
      channelKey,
      await channels.loadContext(channelKey),
      settings,
      UNCALIBRATED,
    );
    if (jobId) return jobId;
  }
  throw new Error(`no pass was enqueued in ${channelKey}`);
}

it('enqueues again a run whose job Redis lost, and the pass completes once', async () => {
  const prefix = randomPrefix();
  const queue = queueOn(prefix);
  const runs = new PgRunStore({ db: fresh.db });
  const jobId = await chatUntilPass('web:lost-job', queue);
  expect(await queue.jobState(jobId)).toBe('pending');
  // Redis restarted without persistence: every key of ours is gone, the run is still `queued`.
  await cleanupPrefix(producer, prefix);
  expect(await queue.jobState(jobId)).toBe('missing');
  expect(await runs.get(jobId)).toMatchObject({ status: 'queued' });

  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const worker = await runCompactionWorker({
    config: () => pipelineConfig(fake.url),
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger: createLogger({ level: 'info', destination }),
    retry: FAST_RETRY,
    reconcile: { policy: { missingGraceMs: 0, graceMs: 0, requeueWithinMs: 60_000 }, intervalMs: 100 },
  });
  cleanups.push(() => worker.close(5_000));

  const run = await vi.waitFor(
    async () => {
      const r = await runs.get(jobId);
      if (r?.status !== 'completed') throw new Error(`run is ${r?.status}`);
      return r;
    },
    { timeout: 20_000, interval: 50 },
  );
  expect(run.attempts).toBe(1);
  const context = await new PgChannelStore({ db: fresh.db }).loadContext('web:lost-job');
  expect(context.spans.filter((s) => s.kind === 'summary' && s.jobId === jobId)).toHaveLength(1);
  const reconciled = lines.filter((l) => l.event === 'compaction.reconciled');
  expect(reconciled).toEqual([
    expect.objectContaining({ jobId, channel: 'web:lost-job', action: 'requeued', reason: 'job_missing' }),
  ]);
});

describe('reconcileRuns', () => {
  const policy = { missingGraceMs: 0, graceMs: 0, requeueWithinMs: 60 * 60_000 };
  const job = (channelKey: string): CompactionJob => ({
    channelKey,
    tier: 'background',
    fromSeq: 1,
    toSeq: 10,
    generation: 0,
  });

  async function recorded(queue: BullmqCompactionQueue, runs: PgRunStore, channelKey: string) {
    const outcome = await queue.enqueue(job(channelKey));
    await runs.create({ ...job(channelKey), jobId: outcome.jobId, usage: 0.81 });
    return outcome.jobId;
  }

  it('marks failed a run whose job failed for good without the worker recording it', async () => {
    const prefix = randomPrefix();
    const queue = queueOn(prefix);
    const runs = new PgRunStore({ db: fresh.db });
    const jobId = await recorded(queue, runs, 'web:unrecorded-failure');
    await runs.start(jobId);
    // A worker whose last try failed while Postgres was unreachable: the failure never reached the run.
    const worker = startCompactionWorker({
      url: redisUrl(),
      prefix,
      processor: async () => {
        throw new EbbError('the model refused the key', { code: 'llm_auth', retryable: false });
      },
    });
    cleanups.push(() => worker.close({ timeoutMs: 5_000 }));
    await vi.waitFor(async () => expect(await queue.jobState(jobId)).toBe('failed'), { timeout: 10_000 });
    expect(await runs.get(jobId)).toMatchObject({ status: 'running' });

    const events: unknown[] = [];
    const tally = await reconcileRuns({ runs, queue, policy, onEvent: (e) => events.push(e) });
    expect(tally).toMatchObject({ failed: 1, requeued: 0, stale: 0 });
    expect(await runs.get(jobId)).toMatchObject({ status: 'failed', error: 'job_failed' });
    expect(events).toEqual([
      expect.objectContaining({ event: 'compaction.reconciled', jobId, action: 'failed' }),
    ]);
    // Settled runs are not looked at again.
    const again = await reconcileRuns({ runs, queue, policy });
    expect(again.failed).toBe(0);
  });

  it('marks stale a run lost longer ago than a requeue is worth, and leaves a waiting one alone', async () => {
    const prefix = randomPrefix();
    const queue = queueOn(prefix);
    const runs = new PgRunStore({ db: fresh.db });
    const waiting = await recorded(queue, runs, 'web:waiting');
    const lost = await recorded(queue, runs, 'web:lost-long-ago');
    expect(await queue.bullmq.remove(lost)).toBe(1);
    expect(await queue.jobState(lost)).toBe('missing');

    await reconcileRuns({ runs, queue, policy: { missingGraceMs: 0, graceMs: 0, requeueWithinMs: 0 } });
    expect(await runs.get(lost)).toMatchObject({ status: 'stale', error: 'job_lost' });
    expect(await runs.get(waiting)).toMatchObject({ status: 'queued' });
    expect(await queue.jobState(waiting)).toBe('pending');
  });

  it('enqueues a job Redis lost again half a minute on, as it was: its focus, the pass it follows', async () => {
    const prefix = randomPrefix();
    const queue = queueOn(prefix);
    const runs = new PgRunStore({ db: fresh.db });
    const followUp: CompactionJob = {
      channelKey: 'web:lost-follow-up',
      tier: 'aggressive',
      fromSeq: 11,
      toSeq: 20,
      generation: 2,
      focus: 'the deploy plan',
      after: 'web%3Alost-follow-up.aggressive.g2.s1-10',
    };
    const { jobId } = await queue.enqueue(followUp);
    await runs.create({ ...followUp, jobId, usage: 0.9 });
    // Redis restarted without persistence.
    await cleanupPrefix(producer, prefix);

    const events: CompactionLogEvent[] = [];
    // The default policy, 31 s after the run was recorded.
    await reconcileRuns({ runs, queue, now: () => Date.now() + 31_000, onEvent: (e) => events.push(e) });
    expect(events.filter((e) => e.jobId === jobId)).toEqual([
      expect.objectContaining({ action: 'requeued', reason: 'job_missing' }),
    ]);
    expect((await queue.bullmq.getJob(jobId))?.data).toEqual(followUp);
    await runs.finish(jobId, { status: 'stale', error: 'test_done' });
  });
});
