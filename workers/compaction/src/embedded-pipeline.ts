/**
 * Embedded mode: no Redis, so passes run in the bot's own process through the in-process queue,
 * with the same processor, stores and semantics as the worker (dedupe, escalation, retries). A
 * crash loses queued passes, not data: the monitor re-triggers them from the stored context.
 */
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { recordFailure } from './compaction-processor.js';
import { createPostgresPipeline, type PostgresPipelineOptions } from './postgres-pipeline.js';

export interface EmbeddedPipelineOptions extends Omit<PostgresPipelineOptions, 'notifier'> {
  /** Waits out a job retry's backoff (tests make it instant). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export function createEmbeddedPipeline(options: EmbeddedPipelineOptions) {
  const notifier = new InProcessContextNotifier();
  const { channels, memories, runs, processor } = createPostgresPipeline({ ...options, notifier });
  const queue = new InlineCompactionQueue({
    processor: (job, signal) => processor(job, signal),
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
  });
  queue.on('failed', (e) => {
    if (!e.willRetry) void recordFailure(runs, e.jobId, e.error).catch(() => {});
  });
  return {
    channels,
    memories,
    runs,
    notifier,
    queue,
    /** Lets queued passes finish, then stops taking new ones. */
    async close(): Promise<void> {
      await queue.drain();
      await queue.close();
    },
  };
}

export type EmbeddedPipeline = ReturnType<typeof createEmbeddedPipeline>;
