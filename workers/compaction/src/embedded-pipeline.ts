/**
 * Embedded mode: no Redis, so passes run in the bot's own process through the in-process queue,
 * with the same processor, stores and semantics as the worker (dedupe, escalation, retries). A
 * crash loses queued passes, not data: the monitor re-triggers them from the stored context.
 */
import type { EbbConfig, EbbEnv } from '@ebb/config';
import type { CompactionEventSink } from '@ebb/core';
import { type Database, PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import type { RetryOptions } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { passSettingsResolver } from './channel-pass-settings.js';
import { createCompactionProcessor, recordFailure } from './compaction-processor.js';

export interface EmbeddedPipelineOptions {
  readonly config: () => EbbConfig;
  readonly env: Pick<EbbEnv, 'OPENAI_API_KEY'>;
  readonly database: Database;
  readonly onEvent?: CompactionEventSink;
  readonly llmTimeoutMs?: number;
  readonly retry?: RetryOptions;
  /** Waits out a job retry's backoff (tests make it instant). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export function createEmbeddedPipeline(options: EmbeddedPipelineOptions) {
  const channels = new PgChannelStore({ db: options.database.db });
  const memories = new PgMemoryStore({ db: options.database.db });
  const runs = new PgRunStore({ db: options.database.db });
  const notifier = new InProcessContextNotifier();
  const processor = createCompactionProcessor({
    channels,
    memories,
    runs,
    notifier,
    settingsFor: passSettingsResolver({
      config: options.config,
      env: options.env,
      ...(options.llmTimeoutMs === undefined ? {} : { llmTimeoutMs: options.llmTimeoutMs }),
      ...(options.retry === undefined ? {} : { retry: options.retry }),
    }),
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
  });
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
