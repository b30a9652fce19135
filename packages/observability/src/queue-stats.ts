/**
 * Where the queue gauges come from, read on every scrape: job counts by state and the age of the
 * oldest job waiting for a worker. `bullmqQueueStats` reads them from a BullMQ queue.
 */
import type { Queue } from 'bullmq';

export interface QueueStats {
  /** The queue's name, the `queue` label of the gauges. */
  readonly name: string;
  /** Jobs per state (`waiting`, `prioritized`, `active`, `delayed`, `failed`, …). */
  counts(): Promise<Record<string, number>>;
  /** Milliseconds since the oldest job that waits for a worker was added; undefined when none waits. */
  oldestWaitingAgeMs(): Promise<number | undefined>;
}

export interface BullmqQueueStatsOptions {
  /** The clock (tests). */
  readonly now?: () => number;
}

/** Priority bands walked at most, so a scrape stays a handful of round trips whatever the queue holds. */
const MAX_PRIORITY_BANDS = 16;

/**
 * Stats of a BullMQ queue. Counts are `getJobCounts()` (every state). The oldest waiting job is the
 * oldest of the `wait` list's tail and, in the `prioritized` set (where every compaction job
 * waits: each has a tier priority), of the first job of each priority band: that set is ordered by
 * priority, then by insertion, so the first job of a band is its oldest and the walk costs two
 * round trips per band, not one per job. A job that went back to waiting after a failed try keeps
 * its original timestamp but takes a later place in its band, so the age is a lower bound then.
 */
export function bullmqQueueStats(queue: Queue, options: BullmqQueueStatsOptions = {}): QueueStats {
  const now = options.now ?? Date.now;
  return {
    name: queue.name,
    counts: () => queue.getJobCounts(),
    async oldestWaitingAgeMs() {
      const timestamps: number[] = [];
      const [head] = await queue.getJobs(['waiting'], 0, 0, true);
      if (head) timestamps.push(head.timestamp);

      let offset = 0;
      const prioritized = await queue.getPrioritizedCount();
      for (let band = 0; band < MAX_PRIORITY_BANDS && offset < prioritized; band++) {
        const [first] = await queue.getJobs(['prioritized'], offset, offset, true);
        if (!first) break;
        timestamps.push(first.timestamp);
        const inBand = (await queue.getCountsPerPriority([first.priority]))[String(first.priority)] ?? 0;
        // The band emptied since we looked: stop rather than loop on the same place.
        if (inBand < 1) break;
        offset += inBand;
      }
      if (timestamps.length === 0) return undefined;
      return Math.max(0, now() - Math.min(...timestamps));
    },
  };
}
