/**
 * The stores and the compaction processor on one database, as both deployments use them: the
 * worker process (BullMQ) and embedded mode (the in-process queue).
 */
import type { EbbConfig, EbbEnv } from '@ebb/config';
import {
  type CompactionEventSink,
  type ContextNotifier,
  type Logger,
  RetryingUsageStore,
  SILENT_LOGGER,
  type Summarizer,
} from '@ebb/core';
import {
  type Database,
  PgChannelStore,
  PgMemoryStore,
  PgRunStore,
  PgTakeBackLog,
  PgUsageStore,
} from '@ebb/db';
import type { RetryOptions } from '@ebb/llm';
import { passSettingsResolver } from './channel-pass-settings.js';
import { createCompactionProcessor } from './compaction-processor.js';

export interface PostgresPipelineOptions {
  /** Read for every pass, so a reloaded config applies to the next one. */
  readonly config: () => EbbConfig;
  readonly env: Pick<EbbEnv, 'OPENAI_API_KEY'>;
  readonly database: Database;
  readonly notifier: ContextNotifier;
  readonly onEvent?: CompactionEventSink;
  readonly llmTimeoutMs?: number;
  /** The LLM retry policy; tests shorten it. */
  readonly retry?: RetryOptions;
  /** Wraps each channel's summarizer (metrics count its LLM calls). */
  readonly wrapSummarizer?: (summarizer: Summarizer) => Summarizer;
  /** Where a request parameter the model's server refused is reported. */
  readonly logger?: Logger;
}

export function createPostgresPipeline(options: PostgresPipelineOptions) {
  const channels = new PgChannelStore({ db: options.database.db });
  const memories = new PgMemoryStore({ db: options.database.db });
  const runs = new PgRunStore({ db: options.database.db });
  const takeBacks = new PgTakeBackLog({ db: options.database.db });
  const { wrapSummarizer, logger } = options;
  // A pass's usage the database cannot take is kept and written once it can (`close()` tries last).
  const usage = new RetryingUsageStore({
    store: new PgUsageStore({ db: options.database.db }),
    log: logger ?? SILENT_LOGGER,
  });
  const settingsFor = passSettingsResolver({
    config: options.config,
    env: options.env,
    ...(options.llmTimeoutMs === undefined ? {} : { llmTimeoutMs: options.llmTimeoutMs }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
    ...(wrapSummarizer === undefined ? {} : { wrap: wrapSummarizer }),
    usage,
    ...(logger === undefined ? {} : { log: logger }),
  });
  const processor = createCompactionProcessor({
    channels,
    memories,
    runs,
    takeBacks,
    notifier: options.notifier,
    settingsFor,
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
  });
  return { channels, memories, runs, takeBacks, usage, settingsFor, processor };
}
