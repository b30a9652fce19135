/**
 * The queue gauges of `createMetrics`: read from a `QueueStats` source on every scrape, and left out
 * (with the error counted) when the source fails or hangs.
 */
import { describe, expect, it } from 'vitest';
import { samples, value } from '../test/exposition.js';
import { createMetrics } from './metrics.js';
import type { QueueStats } from './queue-stats.js';

describe('queue gauges', () => {
  const stats = (over: Partial<QueueStats> = {}): QueueStats => ({
    name: 'compaction',
    counts: async () => ({ waiting: 0, prioritized: 4, active: 2, delayed: 1, failed: 7 }),
    oldestWaitingAgeMs: async () => 93_500,
    ...over,
  });

  it('reads the source on every scrape', async () => {
    let prioritized = 4;
    const metrics = createMetrics({
      processMetrics: false,
      queue: stats({ counts: async () => ({ prioritized, active: 2 }) }),
    });
    let text = await metrics.metricsText();
    expect(value(text, 'ebb_queue_depth', { queue: 'compaction', state: 'prioritized' })).toBe(4);
    expect(value(text, 'ebb_queue_depth', { queue: 'compaction', state: 'active' })).toBe(2);
    expect(value(text, 'ebb_queue_oldest_job_age_seconds', { queue: 'compaction' })).toBe(93.5);
    prioritized = 0;
    text = await metrics.metricsText();
    expect(value(text, 'ebb_queue_depth', { queue: 'compaction', state: 'prioritized' })).toBe(0);
  });

  it('reports an age of 0 when nothing waits', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.observeQueue(stats({ oldestWaitingAgeMs: async () => undefined }));
    expect(
      value(await metrics.metricsText(), 'ebb_queue_oldest_job_age_seconds', { queue: 'compaction' }),
    ).toBe(0);
  });

  it('leaves the queue gauges out, and counts the error, when the source fails or hangs', async () => {
    const metrics = createMetrics({ processMetrics: false, queueStatsTimeoutMs: 50 });
    metrics.observeQueue(stats());
    expect(
      value(await metrics.metricsText(), 'ebb_queue_depth', { queue: 'compaction', state: 'failed' }),
    ).toBe(7);

    metrics.observeQueue(
      stats({
        counts: () =>
          Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false")),
        oldestWaitingAgeMs: () => new Promise(() => {}),
      }),
    );
    const text = await metrics.metricsText();
    expect(samples(text, 'ebb_queue_depth')).toEqual([]);
    expect(samples(text, 'ebb_queue_oldest_job_age_seconds')).toEqual([]);
    expect(value(text, 'ebb_queue_stats_errors_total')).toBe(1);
  });
});
