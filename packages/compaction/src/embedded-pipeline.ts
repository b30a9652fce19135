/**
 * Embedded mode: no Redis, so passes run in the bot's own process through the in-process queue,
 * with the same processor, stores and semantics as the worker (dedupe, escalation, retries). A
 * crash loses queued passes, not data: the reconciler enqueues the runs it left unfinished again
 * (see reconciler.ts), and the monitor re-triggers from the stored context.
 */
import type { Logger } from '@ebb/logger';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { recordFailure } from './compaction-processor.js';
import { createPostgresPipeline, type PostgresPipelineOptions } from './postgres-pipeline.js';
import { startReconciler } from './reconciler.js';

export interface EmbeddedPipelineOptions extends Omit<PostgresPipelineOptions, 'notifier'> {
  /** Waits out a job retry's backoff (tests make it instant). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** For the reconciler's failed rounds. */
  readonly logger: Logger;
}

export function createEmbeddedPipeline(options: EmbeddedPipelineOptions) {
  const notifier = new InProcessContextNotifier();
  const { channels, memories, runs, usage, processor } = createPostgresPipeline({ ...options, notifier });
  const queue = new InlineCompactionQueue({
    processor: (job, signal) => processor(job, signal),
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
  });
  queue.on('failed', (e) => {
    if (!e.willRetry) void recordFailure(runs, e.jobId, e.error).catch(() => {});
  });
  const reconciler = startReconciler({
    runs,
    queue,
    logger: options.logger,
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
  });
  return {
    channels,
    memories,
    runs,
    notifier,
    queue,
    /** Lets queued passes finish, then stops taking new ones. */
    async close(): Promise<void> {
      await reconciler.stop();
      await queue.drain();
      await queue.close();
      await usage.close();
    },
  };
}

export type EmbeddedPipeline = ReturnType<typeof createEmbeddedPipeline>;
