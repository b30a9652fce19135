/**
 * A compaction worker: a BullMQ worker on the `compaction` queue running the compaction processor
 * against Postgres, with context-changed notifications on Redis, and the reconciler of lost runs. The
 * worker process (workers/compaction, what `ebb worker` runs) is built around it, and `ebb dev` runs
 * one inside the bot. Every piece is built from options here and closed in reverse order by `close()`.
 */
import { type EbbConfig, type EbbEnv, resolveChannel, retentionConfigured } from '@ebb/config';
import {
  type CompactionLogEvent,
  DEFAULT_RETRYING_USAGE,
  type ReconcilePolicy,
  type Summarizer,
  settleWithin,
} from '@ebb/core';
import type { Database } from '@ebb/db';
import { isLlmRefusal, loadTokenizer, type RetryOptions } from '@ebb/llm';
import type { Logger } from '@ebb/logger';
import { EBB_VERSION, type EbbMetrics, meteredSummarizer, tracedSummarizer } from '@ebb/observability';
import {
  BullmqCompactionQueue,
  type BullmqCompactionWorker,
  closeRedis,
  createRedis,
  DEFAULT_COMPACTION_WORKER_OPTIONS,
  PRODUCER_TIMEOUTS,
  QUIT_WAIT_MS,
  RedisContextNotifier,
  startCompactionWorker,
  waitForReady,
} from '@ebb/queue';
import { recordFailure } from './compaction-processor.js';
import { createPostgresPipeline } from './postgres-pipeline.js';
import { startReconciler } from './reconciler.js';
import { RetentionSweep } from './retention-sweep.js';
import { TAKE_BACK_RELEASE_MS, TakeBackRunner } from './take-back-runner.js';

export interface RunWorkerOptions {
  /** Read for every pass, so a reloaded config applies to the next one. */
  readonly config: () => EbbConfig;
  readonly env: Pick<EbbEnv, 'OPENAI_API_KEY'>;
  readonly database: Database;
  readonly redisUrl: string;
  readonly redisPrefix?: string;
  readonly logger: Logger;
  readonly concurrency?: number;
  /** BullMQ lock and stalled-check timing (tests shorten them). */
  readonly lockDuration?: number;
  readonly stalledInterval?: number;
  readonly llmTimeoutMs?: number;
  readonly retry?: RetryOptions;
  /** Counts passes and LLM calls (the worker's /metrics, or the bot's in `ebb dev`). */
  readonly metrics?: EbbMetrics;
  /** The stuck-run reconciler's timing (tests shorten it). */
  readonly reconcile?: { readonly policy?: ReconcilePolicy; readonly intervalMs?: number };
  /** The retention sweep's clock (tests replaying old traffic on its own times). */
  readonly now?: () => number;
}

export interface RunningWorker {
  readonly worker: BullmqCompactionWorker;
  /** Finishes the current jobs (or hands them back past the timeout), then closes its Redis connections (the database is the caller's). */
  close(timeoutMs?: number): Promise<void>;
}

/** How long a close waits for a retention sweep in hand (it stops at its next batch; the next sweep goes on). */
const RETENTION_STOP_MS = 2_000;

/**
 * How much longer than its `timeoutMs` a `close` may take with Redis not answering: the retention
 * sweep in hand and the take-back claims given up (2 s each at most), the reconciler's
 * round in flight (a producer command gives up after 5 s), then the worker's graceful close, the
 * last try of the usage the database could not take (2 s at most), and the QUITs of its connection,
 * the producer and the notifier, 2 s each at most. A caller that bounds the close (a shutdown step)
 * gives it `timeoutMs` plus this.
 */
export const CLOSE_BEYOND_PASSES_MS =
  RETENTION_STOP_MS +
  TAKE_BACK_RELEASE_MS +
  PRODUCER_TIMEOUTS.commandTimeoutMs +
  DEFAULT_RETRYING_USAGE.closeMs +
  4 * QUIT_WAIT_MS;

export async function runCompactionWorker(options: RunWorkerOptions): Promise<RunningWorker> {
  const { database, logger } = options;
  const prefix = options.redisPrefix === undefined ? {} : { prefix: options.redisPrefix };
  const notifier = RedisContextNotifier.connect(options.redisUrl, { ...prefix, logger });
  const onEvent = (e: CompactionLogEvent) => {
    logCompactionEvent(logger, e);
    options.metrics?.onCompactionEvent(e);
  };
  const pipeline = createPostgresPipeline({
    config: options.config,
    env: options.env,
    database,
    notifier,
    onEvent,
    logger,
    ...(options.metrics === undefined
      ? {}
      : {
          wrapSummarizer: (s: Summarizer) =>
            tracedSummarizer(meteredSummarizer(s, (options.metrics as EbbMetrics).onLlmCalls)),
        }),
    ...(options.llmTimeoutMs === undefined ? {} : { llmTimeoutMs: options.llmTimeoutMs }),
    ...(options.retry === undefined ? {} : { retry: options.retry }),
  });
  const { runs, processor } = pipeline;
  // Take-backs a bot left pending (it died after its 200, or its store failed) are finished here too.
  const takeBacks = new TakeBackRunner({ ...pipeline, notifier, logger });
  takeBacks.start();
  // Retention runs where passes run, beside no turns: here, for every deployment with a worker.
  const config = options.config;
  const retention = new RetentionSweep({
    channels: pipeline.channels,
    takeBacks: pipeline.takeBacks,
    runner: takeBacks,
    enabled: () => retentionConfigured(config()),
    retainDaysFor: (key) => resolveChannel(config(), key).privacy.retainDays,
    tokenizerFor: (key) => loadTokenizer(resolveChannel(config(), key).llm.encoding),
    logger,
    ...(options.metrics === undefined ? {} : { onSwept: (options.metrics as EbbMetrics).onRetention }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  retention.start();
  const worker = startCompactionWorker({
    url: options.redisUrl,
    ...prefix,
    processor: (job, signal) => processor(job, signal),
    logger,
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.lockDuration === undefined ? {} : { lockDuration: options.lockDuration }),
    ...(options.stalledInterval === undefined ? {} : { stalledInterval: options.stalledInterval }),
  });
  // One child logger per pass: every line of it carries the job and its channel.
  const passLogger = (jobId: string, channel: string | undefined) =>
    logger.child({ jobId, ...(channel === undefined ? {} : { channel }) });
  worker.on('failed', (e) => {
    if (e.willRetry) return;
    // The last try failed: the run is marked failed, which feeds the channel's circuit breaker.
    recordFailure(runs, e.jobId, e.error).catch((err: unknown) =>
      passLogger(e.jobId, e.channelKey).error(
        { event: 'compaction.record_failed', err },
        'could not record a failed compaction run',
      ),
    );
  });
  worker.on('stalled', (e) =>
    passLogger(e.jobId, undefined).warn(
      { event: 'queue.job_stalled' },
      'compaction job stalled; another worker takes it over',
    ),
  );
  // Not awaited: a worker started before Redis (or while it is away) waits for it in the background,
  // and its caller gets the handle at once, so a SIGTERM meanwhile can still close it.
  worker.waitUntilReady().then(
    () =>
      logger.info(
        {
          event: 'worker.ready',
          version: EBB_VERSION,
          concurrency: options.concurrency ?? 2,
          database: database.kind,
        },
        `compaction worker ${EBB_VERSION} ready`,
      ),
    () => {},
  );
  // Runs left queued or running by a lost job (see reconciler.ts), at start and every 15 s.
  const producer = createRedis(options.redisUrl, { role: 'producer', logger });
  // Not ready yet: the first round fails, says so, and the next one runs a minute later.
  await waitForReady(producer).catch(() => {});
  const queue = new BullmqCompactionQueue({ connection: producer, ...prefix, logger });
  const reconciler = startReconciler({
    runs,
    queue,
    onEvent,
    logger,
    ...(options.reconcile?.policy === undefined ? {} : { policy: options.reconcile.policy }),
    ...(options.reconcile?.intervalMs === undefined ? {} : { intervalMs: options.reconcile.intervalMs }),
  });

  return {
    worker,
    async close(timeoutMs = DEFAULT_COMPACTION_WORKER_OPTIONS.closeTimeoutMs) {
      await settleWithin(retention.stop(), RETENTION_STOP_MS);
      // Its claims given up: another process finishes a take-back this close cuts off.
      await takeBacks.stop();
      await reconciler.stop();
      // The worker names the jobs it hands back (worker.jobs_handed_back) itself.
      await worker.close({ timeoutMs });
      // After the passes: their usage the database could not take gets its last try.
      await pipeline.usage.close();
      await queue.close();
      await closeRedis(producer);
      await notifier.close();
    },
  };
}

/**
 * One log line per compaction event, with the event name as the message: at info; a failed try, or
 * memories the model proposed that had to be rejected or repaired (counts by reason, never the
 * text), at warn; at error when the provider refuses us (a rejected key, no credit), which needs an
 * operator.
 */
export function logCompactionEvent(logger: Logger, event: CompactionLogEvent): void {
  if (event.event === 'compaction.memories_invalid') logger.warn(event, event.event);
  else if (event.event !== 'compaction.failed') logger.info(event, event.event);
  else if (isLlmRefusal(event.error)) logger.error(event, event.event);
  else logger.warn(event, event.event);
}
