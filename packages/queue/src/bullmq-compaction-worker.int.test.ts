import { EbbError, SummarizerGaveUpError } from '@ebb/core';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BullmqCompactionQueue } from './bullmq-compaction-queue.js';
import { type BullmqCompactionWorker, startCompactionWorker } from './bullmq-compaction-worker.js';
import { COMPACTION_JOB_NAME, COMPACTION_QUEUE_NAME } from './compaction-jobs.js';
import type { CompactionFailedEvent, CompactionJobContext, CompactionProcessor } from './job-driver.js';
import { createRedis, waitForReady } from './redis-connection.js';

const WAIT = { timeout: 15_000, interval: 20 };
const job = { channelKey: 'slack:T1:C1', tier: 'background', fromSeq: 1, toSeq: 8, generation: 2 } as const;

describe('BullmqCompactionWorker', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    const prefix = randomPrefix();
    const redis = createRedis(redisUrl(), { role: 'producer' });
    await waitForReady(redis);
    const queue = new BullmqCompactionQueue({
      connection: redis,
      prefix,
      jobOptions: { backoff: { type: 'exponential', delay: 5, jitter: 0 } },
    });
    cleanups.push(async () => {
      await queue.close();
      await cleanupPrefix(redis, prefix);
      await redis.quit();
    });
    return { prefix, redis, queue };
  }

  function worker(
    prefix: string,
    processor: CompactionProcessor,
    extra: Partial<Parameters<typeof startCompactionWorker>[0]> = {},
  ): BullmqCompactionWorker {
    const w = startCompactionWorker({ url: redisUrl(), prefix, processor, concurrency: 1, ...extra });
    cleanups.push(() => w.close({ timeoutMs: 2_000 }));
    return w;
  }

  function failedEvents(w: BullmqCompactionWorker): CompactionFailedEvent[] {
    const seen: CompactionFailedEvent[] = [];
    w.on('failed', (e) => seen.push(e));
    return seen;
  }

  it('fails a bad payload at once without calling the processor', async () => {
    const { prefix, redis } = await setup();
    const raw = new Queue(COMPACTION_QUEUE_NAME, { connection: redis, prefix });
    cleanups.push(() => raw.close());
    const added = await raw.add(
      COMPACTION_JOB_NAME,
      { channelKey: 'slack:T1:C1', tier: 'urgent', fromSeq: 0, text: 'message text must never be here' },
      { attempts: 5, backoff: { type: 'fixed', delay: 5 } },
    );
    const processor = vi.fn<CompactionProcessor>(async () => 'ran');
    const w = worker(prefix, processor);
    const failed = failedEvents(w);
    await vi.waitFor(() => expect(failed).toHaveLength(1), WAIT);
    expect(failed[0]).toMatchObject({ jobId: added.id, attempt: 1, willRetry: false });
    expect(failed[0]?.channelKey).toBeUndefined();
    expect(failed[0]?.error.name).toBe('UnrecoverableError');
    expect(processor).not.toHaveBeenCalled();
    const stored = await raw.getJob(added.id ?? '');
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.attemptsMade).toBe(1);
    expect(stored?.failedReason).toMatch(/^invalid_compaction_payload: /);
  });

  it('records a non-retryable error as the failed reason after one attempt', async () => {
    const { prefix, queue } = await setup();
    // What the summarizer throws when the provider refuses the key (an LlmError `llm_auth`, which
    // @ebb/queue cannot import: the same code and retryable flag on the EbbError it extends).
    const refused = new EbbError('401 Incorrect API key provided', { code: 'llm_auth', retryable: false });
    const processor = vi.fn<CompactionProcessor>(async () => {
      throw new SummarizerGaveUpError(refused, []);
    });
    const w = worker(prefix, processor);
    const failed = failedEvents(w);
    const { jobId } = await queue.enqueue(job);
    await vi.waitFor(() => expect(failed).toHaveLength(1), WAIT);
    const stored = await queue.bullmq.getJob(jobId);
    expect(await stored?.getState()).toBe('failed');
    expect(stored?.attemptsMade).toBe(1);
    expect(stored?.failedReason).toBe('llm_auth: the summarizer gave up: 401 Incorrect API key provided');
    expect(processor).toHaveBeenCalledTimes(1);
  });

  it('close() lets the running job finish', async () => {
    const { prefix, queue } = await setup();
    let release = () => {};
    const started: string[] = [];
    const w = worker(prefix, async (ctx) => {
      started.push(ctx.jobId);
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return 'done';
    });
    const completed: string[] = [];
    w.on('completed', (e) => completed.push(e.jobId));
    const { jobId } = await queue.enqueue(job);
    await vi.waitFor(() => expect(started).toEqual([jobId]), WAIT);
    const closing = w.close({ timeoutMs: 10_000 });
    release();
    expect(await closing).toBe('drained');
    expect(completed).toEqual([jobId]);
    expect(await queue.bullmq.getJobState(jobId)).toBe('completed');
  });

  it('hands a job it could not finish before the close timeout to another worker (stalled)', async () => {
    const { prefix, queue } = await setup();
    const timings = { lockDuration: 1_000, stalledInterval: 250, maxStalledCount: 3 };
    const firstSignal: AbortSignal[] = [];
    const first = worker(
      prefix,
      (_ctx, signal) => {
        firstSignal.push(signal);
        return new Promise(() => {}); // never finishes
      },
      timings,
    );
    const { jobId } = await queue.enqueue(job);
    await vi.waitFor(() => expect(first.activeJobIds).toEqual([jobId]), WAIT);

    expect(await first.close({ timeoutMs: 100 })).toBe('timed_out');
    expect(firstSignal[0]?.aborted).toBe(true);
    expect(await queue.bullmq.getJobState(jobId)).toBe('active');

    const seen: CompactionJobContext[] = [];
    const second = worker(
      prefix,
      async (ctx) => {
        seen.push(ctx);
        return 'recovered';
      },
      timings,
    );
    const stalled: string[] = [];
    second.on('stalled', (e) => stalled.push(e.jobId));
    await vi.waitFor(async () => expect(await queue.bullmq.getJobState(jobId)).toBe('completed'), WAIT);
    expect(stalled).toEqual([jobId]);
    expect(seen.map((c) => [c.jobId, c.attempt])).toEqual([[jobId, 1]]);
  });

  it('accepts a caller-owned connection and leaves it open', async () => {
    const { prefix, queue } = await setup();
    const connection: Redis = createRedis(redisUrl(), { role: 'worker' });
    cleanups.push(() => connection.quit());
    const w = startCompactionWorker({ connection, prefix, processor: async () => 'ok' });
    const completed: string[] = [];
    w.on('completed', (e) => completed.push(e.jobId));
    const { jobId } = await queue.enqueue(job);
    await vi.waitFor(() => expect(completed).toEqual([jobId]), WAIT);
    expect(await w.close()).toBe('drained');
    expect(await connection.ping()).toBe('PONG');
  });

  it('stops with Redis partitioned: its forced close waits on none of the unanswered connections', async () => {
    const { prefix } = await setup();
    const target = new URL(redisUrl());
    const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
    cleanups.push(() => proxy.close());
    const connection = createRedis(`redis://127.0.0.1:${proxy.port}`, { role: 'worker' });
    cleanups.push(async () => connection.disconnect());
    const logger = new RecordingLogger();
    const w = startCompactionWorker({ connection, prefix, processor: async () => 'ok', logger });
    cleanups.push(() => w.close());
    await w.waitUntilReady();

    // Redis goes, then a partition: each reconnect is accepted and never answered, so close() takes
    // its Redis-away path with every connection open and silent. BullMQ's forced close drops them
    // (no QUIT): it returns at once, and fails nothing.
    proxy.cut();
    await vi.waitFor(() => expect(connection.status).toBe('reconnecting'), WAIT);
    proxy.stall();
    await vi.waitFor(() => expect(connection.status).toBe('connect'), WAIT);

    expect(await w.close({ timeoutMs: 2_000 })).toBe('drained');
    expect(logger.events('worker.close_failed')).toEqual([]);
  });

  // The partition starts while the worker is connected, so close() takes its graceful path, whose QUITs
  // are never answered. With nothing in hand it must not wait out its timeout: given one longer than
  // the test's, it would fail by timing out.
  it('stops within seconds, drained, when Redis stops answering while it is connected and no pass is in hand', async () => {
    const { prefix } = await setup();
    const target = new URL(redisUrl());
    const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
    cleanups.push(() => proxy.close());
    const logger = new RecordingLogger();
    const w = startCompactionWorker({
      url: `redis://127.0.0.1:${proxy.port}`,
      prefix,
      processor: async () => 'ok',
      logger,
    });
    cleanups.push(() => w.close());
    await w.waitUntilReady();
    proxy.stall();

    expect(await w.close({ timeoutMs: 120_000 })).toBe('drained');
    expect(logger.events('worker.jobs_handed_back')).toEqual([]);
  });

  // A pass finishes while Redis does not answer: its completion cannot be written, so the job stays
  // active there, stalls and runs again. The close must say so rather than report itself drained.
  it('names a pass that finished while Redis did not answer as handed back', async () => {
    const { prefix, queue } = await setup();
    const target = new URL(redisUrl());
    const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
    cleanups.push(() => proxy.close());
    const logger = new RecordingLogger();
    let finish = () => {};
    const w = startCompactionWorker({
      url: `redis://127.0.0.1:${proxy.port}`,
      prefix,
      processor: () =>
        new Promise<string>((resolve) => {
          finish = () => resolve('done');
        }),
      logger,
    });
    cleanups.push(() => w.close());
    const { jobId } = await queue.enqueue(job);
    await vi.waitFor(() => expect(w.activeJobIds).toEqual([jobId]), WAIT);
    proxy.stall();

    const closing = w.close({ timeoutMs: 120_000 });
    finish();
    expect(await closing).toBe('timed_out');
    expect(logger.events('worker.jobs_handed_back').map((e) => e.fields.jobIds)).toEqual([[jobId]]);
  });

  it('refuses options with both or neither of connection and url', () => {
    expect(() => startCompactionWorker({ prefix: 'x', processor: async () => 0 })).toThrow(TypeError);
  });
});
