import { BullmqCompactionQueue, createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { value } from '../test/exposition.js';
import { createMetrics } from './metrics.js';
import { bullmqQueueStats } from './queue-stats.js';

describe('queue gauges from BullMQ on Redis', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function redis(): Promise<{ redis: Redis; prefix: string }> {
    const prefix = randomPrefix();
    const connection = createRedis(redisUrl(), { role: 'producer' });
    await waitForReady(connection);
    cleanups.push(async () => {
      await cleanupPrefix(connection, prefix);
      await connection.quit();
    });
    return { redis: connection, prefix };
  }

  it("exposes the compaction queue's depth by state and the age of its oldest waiting job", async () => {
    const { redis: connection, prefix } = await redis();
    const compaction = new BullmqCompactionQueue({ connection, prefix });
    cleanups.push(() => compaction.close());
    const job = { fromSeq: 1, toSeq: 100, generation: 1 } as const;
    const first = await compaction.enqueue({ ...job, channelKey: 'slack:T1:C1', tier: 'background' });
    await compaction.enqueue({ ...job, channelKey: 'slack:T1:C2', tier: 'aggressive' });
    await compaction.enqueue({ ...job, channelKey: 'discord:G1:C3', tier: 'emergency' });

    const oldest = await compaction.bullmq.getJob(first.jobId);
    if (!oldest) throw new Error('the first job is gone');
    let now = oldest.timestamp + 42_000;
    const metrics = createMetrics({
      processMetrics: false,
      queue: bullmqQueueStats(compaction.bullmq, { now: () => now }),
    });

    let text = await metrics.metricsText();
    const depth = (state: string) => value(text, 'ebb_queue_depth', { queue: 'compaction', state });
    // Every compaction job has a tier priority, so it waits in the prioritized set.
    expect(depth('prioritized')).toBe(3);
    expect(depth('waiting')).toBe(0);
    expect(depth('active')).toBe(0);
    // The background job was added first and sits in the last priority band.
    expect(value(text, 'ebb_queue_oldest_job_age_seconds', { queue: 'compaction' })).toBe(42);
    expect(text).not.toContain('slack:T1');
    expect(text).not.toContain('%3A');

    await compaction.bullmq.obliterate({ force: true });
    now += 1_000;
    text = await metrics.metricsText();
    expect(depth('prioritized')).toBe(0);
    expect(value(text, 'ebb_queue_oldest_job_age_seconds', { queue: 'compaction' })).toBe(0);
  });

  it('finds the oldest waiting job across the wait list and every priority band', async () => {
    const { redis: connection, prefix } = await redis();
    const queue = new Queue('observed', { connection, prefix });
    cleanups.push(() => queue.close());
    const now = 1_800_000_000_000;
    const add = (name: string, ageMs: number, priority?: number) =>
      queue.add(name, {}, { timestamp: now - ageMs, ...(priority === undefined ? {} : { priority }) });
    // The oldest job waits in the lowest band, behind a plain job and higher priorities.
    await add('oldest-low', 90_000, 3);
    await add('plain', 30_000);
    await add('urgent', 10_000, 1);
    await add('middle', 20_000, 2);
    await add('late-low', 5_000, 3);
    const stats = bullmqQueueStats(queue, { now: () => now });
    expect(await stats.counts()).toMatchObject({ waiting: 1, prioritized: 4 });
    expect(await stats.oldestWaitingAgeMs()).toBe(90_000);

    // The wait list's oldest is at its tail.
    await queue.obliterate({ force: true });
    await add('urgent', 10_000, 1);
    await add('plain-old', 60_000);
    await add('plain-new', 1_000);
    expect(await stats.oldestWaitingAgeMs()).toBe(60_000);

    const empty = new Queue('empty', { connection, prefix });
    cleanups.push(() => empty.close());
    expect(await bullmqQueueStats(empty).oldestWaitingAgeMs()).toBeUndefined();
  });
});
