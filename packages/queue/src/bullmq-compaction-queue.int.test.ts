import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { compactionQueueContract } from '../test/compaction-queue.contract.js';
import { BullmqCompactionQueue } from './bullmq-compaction-queue.js';
import { startCompactionWorker } from './bullmq-compaction-worker.js';
import { COMPACTION_QUEUE_NAME, compactionJobId, tierPriority } from './compaction-jobs.js';
import { createRedis, RedisUnavailableError, waitForReady } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

async function producer(): Promise<Redis> {
  const redis = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(redis);
  return redis;
}

compactionQueueContract('BullmqCompactionQueue', async (processor, { attempts }) => {
  const prefix = randomPrefix();
  const [one, two] = await Promise.all([producer(), producer()]);
  const jobOptions = { attempts, backoff: { type: 'exponential', delay: 5, jitter: 0 } } as const;
  const queue = new BullmqCompactionQueue({ connection: one, prefix, jobOptions });
  const other = new BullmqCompactionQueue({ connection: two, prefix, jobOptions });
  const worker = startCompactionWorker({ url: redisUrl(), prefix, processor, concurrency: 1 });
  await worker.waitUntilReady();
  return {
    queue,
    other,
    events: worker,
    keepsFinishedJobs: true,
    close: async () => {
      await worker.close({ timeoutMs: 5_000 });
      await Promise.all([queue.close(), other.close()]);
      await cleanupPrefix(one, prefix);
      await Promise.all([one.quit(), two.quit()]);
    },
  };
});

describe('BullmqCompactionQueue on Redis', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    const prefix = randomPrefix();
    const redis = await producer();
    const queue = new BullmqCompactionQueue({ connection: redis, prefix });
    cleanups.push(async () => {
      await queue.close();
      await cleanupPrefix(redis, prefix);
      await redis.quit();
    });
    return { prefix, redis, queue, keys: redisKeys(prefix) };
  }

  it('stores the payload as is, with the deterministic id, the tier priority and the default options', async () => {
    const { queue, redis, keys } = await setup();
    const payload = {
      channelKey: 'slack:T1:C1',
      tier: 'aggressive',
      fromSeq: 3,
      toSeq: 90,
      generation: 4,
    } as const;
    const outcome = await queue.enqueue(payload);
    expect(outcome).toEqual({ kind: 'enqueued', jobId: compactionJobId(payload) });
    const stored = await queue.bullmq.getJob(outcome.jobId);
    expect(stored?.data).toEqual(payload);
    expect(stored?.opts).toMatchObject({
      attempts: 5,
      priority: tierPriority('aggressive'),
      backoff: { type: 'exponential', delay: 2_000 },
      removeOnComplete: { age: expect.any(Number), count: expect.any(Number) },
      removeOnFail: { age: expect.any(Number), count: expect.any(Number) },
    });
    expect(await redis.get(keys.compactionDedupeKey(payload.channelKey))).toBe(outcome.jobId);
    expect(await queue.inFlight(payload.channelKey)).toMatchObject([
      { jobId: outcome.jobId, running: false },
    ]);
  });

  it('replaces a slot left behind by a job that vanished', async () => {
    const { queue, redis, keys } = await setup();
    await redis.set(keys.compactionDedupeKey('slack:T1:C1'), 'gone-job');
    expect(await queue.inFlight('slack:T1:C1')).toEqual([]);
    const outcome = await queue.enqueue({
      channelKey: 'slack:T1:C1',
      tier: 'background',
      fromSeq: 1,
      toSeq: 2,
      generation: 0,
    });
    expect(outcome.kind).toBe('enqueued');
    expect(await redis.get(keys.compactionDedupeKey('slack:T1:C1'))).toBe(outcome.jobId);
  });

  it('escalates a job that is waiting out a retry backoff (delayed)', async () => {
    const { queue, prefix } = await setup();
    const job = {
      channelKey: 'slack:T1:C1',
      tier: 'background',
      fromSeq: 1,
      toSeq: 2,
      generation: 0,
    } as const;
    const first = await queue.enqueue(job);
    // A worker fails it once; with the default 2 s backoff it sits in `delayed`.
    const worker = startCompactionWorker({
      url: redisUrl(),
      prefix,
      processor: async () => {
        throw new Error('provider down');
      },
    });
    cleanups.push(() => worker.close({ timeoutMs: 1_000 }));
    const failed = new Promise((resolve) => worker.once('failed', resolve));
    await failed;
    await worker.close({ timeoutMs: 1_000 });
    expect(await queue.bullmq.getJobState(first.jobId)).toBe('delayed');
    const second = await queue.enqueue({ ...job, tier: 'emergency' });
    expect(second).toMatchObject({ kind: 'escalated', replacedJobId: first.jobId });
    expect(await queue.bullmq.getJobState(first.jobId)).toBe('unknown');
  });

  it('fails fast with RedisUnavailableError when Redis is down', async () => {
    const redis = createRedis('redis://127.0.0.1:1', { role: 'producer' });
    const queue = new BullmqCompactionQueue({ connection: redis, prefix: randomPrefix() });
    cleanups.push(async () => {
      await queue.close();
      redis.disconnect();
    });
    const job = {
      channelKey: 'slack:T1:C1',
      tier: 'background',
      fromSeq: 1,
      toSeq: 2,
      generation: 0,
    } as const;
    await expect(queue.enqueue(job)).rejects.toBeInstanceOf(RedisUnavailableError);
    await expect(queue.inFlight('slack:T1:C1')).rejects.toMatchObject({
      code: 'redis_unavailable',
      retryable: true,
    });
  });

  it('uses the catalog queue name under the prefix', async () => {
    const { queue, prefix, redis } = await setup();
    await queue.enqueue({ channelKey: 'web:1', tier: 'background', fromSeq: 1, toSeq: 1, generation: 0 });
    const plain = new Queue(COMPACTION_QUEUE_NAME, { connection: redis, prefix });
    cleanups.push(() => plain.close());
    expect(await plain.count()).toBe(1);
  });
});
