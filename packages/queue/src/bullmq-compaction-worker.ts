/**
 * The worker's side of the `compaction` queue: a BullMQ `Worker` around an Ebb processor.
 *
 * - A payload that does not parse never reaches the processor: it fails the job with
 *   `UnrecoverableError` (no retry).
 * - An error with `retryable === false` (an `EbbError` by default) fails the job with
 *   `UnrecoverableError`; any other error is rethrown and BullMQ retries with the job's backoff.
 * - A `PassDeferredError` (a follow-up pass finished before the pass ahead of it spliced) moves the
 *   job back to `delayed` for its `retryAfterMs` with BullMQ's `moveToDelayed` + `DelayedError`: no
 *   attempt is spent, and the checkpointed summary is reused when it runs again.
 * - A provider that asked us to wait (a rate limit: `providerWaitMs`) gets the same treatment as a
 *   deferral: the job goes back to `delayed` for that long without spending an attempt. Each job
 *   waits for itself rather than pausing the queue, so a pass of a higher tier, which does not wait
 *   for the provider but falls back, is never held behind it.
 *
 * Shutdown: `close()` stops fetching jobs and waits for the running ones to finish (SIGTERM). Past
 * `timeoutMs` it stops waiting: it disconnects from Redis (so nothing more is written for those jobs
 * and their locks are no longer renewed) and aborts the processors' signals. Each unfinished job
 * stays `active` until its lock expires (`lockDuration`); then the stalled checker of any other
 * worker (every `stalledInterval`) moves it back to waiting and it runs again from the start. A
 * stall does not spend an attempt; after `maxStalledCount` stalls the job fails. Running a pass
 * twice is safe: the splice is idempotent on the job id. With Redis away when `close()` is called,
 * it stops fetching, waits for the jobs in hand the same way, and closes without a word to Redis
 * (BullMQ's own close would wait for Redis for ever).
 *
 * Events (`completed`, `failed`, `stalled`) are for the caller to log; this class logs only
 * connection problems, a timed-out close, and a job Redis lost while it ran (`queue.job_vanished`,
 * once per job: BullMQ then fails each move of it; the run in Postgres is what counts).
 */
import { EventEmitter } from 'node:events';
import {
  codedErrorText,
  isRetryable,
  type Logger,
  LruMap,
  PassDeferredError,
  SILENT_LOGGER,
  settleWithin,
} from '@ebb/core';
import { DelayedError, type Job, UnrecoverableError, Worker, type WorkerOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  COMPACTION_QUEUE_NAME,
  CompactionJobPayload,
  decodeChannelKey,
  parseCompactionPayload,
} from './compaction-jobs.js';
import { type CompactionEvents, type CompactionProcessor, providerWaitMs, toError } from './job-driver.js';
import { inPassSpan } from './job-trace.js';
import { closeRedis, createRedis, QUIT_WAIT_MS } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

export interface CompactionWorkerOptions {
  /** Either a `worker` connection (the caller closes it after `close()`)… */
  readonly connection?: Redis;
  /** …or a URL: the worker opens its own connection and closes it. */
  readonly url?: string;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  readonly processor: CompactionProcessor;
  /** Jobs run at once by this worker (LLM calls: keep it small). */
  readonly concurrency?: number;
  /** How long a job's lock lives without renewal (renewed every half of it while the job runs). */
  readonly lockDuration?: number;
  /** How often this worker looks for stalled jobs. */
  readonly stalledInterval?: number;
  /** Stalls a job survives before it fails. */
  readonly maxStalledCount?: number;
  /** A global rate limit of passes (BullMQ's `limiter`). */
  readonly limiter?: { readonly max: number; readonly duration: number };
  readonly logger?: Logger;
}

export const DEFAULT_COMPACTION_WORKER_OPTIONS = {
  concurrency: 2,
  lockDuration: 30_000,
  stalledInterval: 30_000,
  maxStalledCount: 2,
  closeTimeoutMs: 30_000,
} as const;

export type CloseOutcome = 'drained' | 'timed_out';

export class BullmqCompactionWorker extends EventEmitter<CompactionEvents> {
  readonly #worker: Worker<unknown, unknown, string>;
  readonly #connection: Redis;
  readonly #ownedConnection: Redis | undefined;
  readonly #log: Logger;
  readonly #active = new Set<string>();
  /** Passes that finished after `close()` was called: their completion may not have reached Redis. */
  readonly #finishedWhileClosing = new Set<string>();
  /** Jobs whose loss from Redis was logged. */
  readonly #vanished = new LruMap<string, true>(MAX_VANISHED_LOGGED);
  /** Called once no job is running. */
  readonly #onIdle = new Set<() => void>();
  #closing: Promise<CloseOutcome> | undefined;

  constructor(options: CompactionWorkerOptions) {
    super();
    if ((options.connection === undefined) === (options.url === undefined)) {
      throw new TypeError('startCompactionWorker needs exactly one of `connection` and `url`');
    }
    this.#log = options.logger ?? SILENT_LOGGER;
    this.#ownedConnection =
      options.url === undefined ? undefined : createRedis(options.url, { role: 'worker', logger: this.#log });
    const connection = options.connection ?? this.#ownedConnection;
    if (connection === undefined) throw new TypeError('unreachable: no connection');
    this.#connection = connection;
    const d = DEFAULT_COMPACTION_WORKER_OPTIONS;
    const workerOptions: WorkerOptions = {
      connection,
      prefix: redisKeys(options.prefix).bullmqPrefix,
      concurrency: options.concurrency ?? d.concurrency,
      lockDuration: options.lockDuration ?? d.lockDuration,
      stalledInterval: options.stalledInterval ?? d.stalledInterval,
      maxStalledCount: options.maxStalledCount ?? d.maxStalledCount,
      name: 'ebb-compaction',
      ...(options.limiter ? { limiter: { ...options.limiter } } : {}),
    };
    const processor = options.processor;
    // Three parameters: BullMQ passes an AbortSignal only to processors that declare it.
    const run = async (job: Job<unknown>, token: string | undefined, signal?: AbortSignal) => {
      let payload: CompactionJobPayload;
      try {
        payload = parseCompactionPayload(job.data);
      } catch (err) {
        throw unrecoverable(err);
      }
      const jobId = job.id ?? '';
      this.#active.add(jobId);
      try {
        const attempt = job.attemptsMade + 1;
        const { trace: _trace, ...pass } = payload;
        const started = {
          attempt,
          createdAt: job.timestamp,
          startedAt: job.processedOn ?? Date.now(),
          system: 'bullmq',
        };
        return await inPassSpan(payload, started, () =>
          processor(
            { ...pass, jobId, attempt, lastAttempt: attempt >= (job.opts.attempts ?? 1) },
            signal ?? new AbortController().signal,
          ),
        );
      } catch (err) {
        const wait = err instanceof PassDeferredError ? err.retryAfterMs : providerWaitMs(err);
        if (wait !== undefined) {
          await job.moveToDelayed(Date.now() + wait, token);
          throw new DelayedError(codedErrorText(err));
        }
        if (!isRetryable(err)) throw unrecoverable(err);
        throw err;
      } finally {
        this.#active.delete(jobId);
        if (this.#closing) this.#finishedWhileClosing.add(jobId);
        if (this.#active.size === 0) for (const idle of this.#onIdle) idle();
      }
    };
    this.#worker = new Worker<unknown, unknown, string>(COMPACTION_QUEUE_NAME, run, workerOptions);

    this.#worker.on('completed', (job, result) => {
      const payload = CompactionJobPayload.safeParse(job.data);
      if (!payload.success) return;
      this.emit('completed', {
        jobId: job.id ?? '',
        channelKey: payload.data.channelKey,
        tier: payload.data.tier,
        attempt: job.attemptsMade,
        result,
      });
    });
    this.#worker.on('failed', (job, error) => {
      const payload = CompactionJobPayload.safeParse(job?.data);
      this.emit('failed', {
        jobId: job?.id ?? '',
        ...(payload.success ? { channelKey: payload.data.channelKey, tier: payload.data.tier } : {}),
        attempt: job?.attemptsMade ?? 0,
        error,
        // BullMQ sets finishedOn only when the job is done for good.
        willRetry: job !== undefined && !job.finishedOn,
      });
    });
    this.#worker.on('stalled', (jobId) => this.emit('stalled', { jobId }));
    this.#worker.on('error', (err) => {
      const vanished = vanishedJob(err);
      if (vanished === undefined) {
        this.#log.error({ event: 'worker.failed', err }, 'compaction worker error');
        return;
      }
      // BullMQ tries each of its moves of the job (to completed, then to failed or delayed): one line.
      if (this.#vanished.get(vanished.jobId)) return;
      this.#vanished.set(vanished.jobId, true);
      this.#log.warn(
        {
          event: 'queue.job_vanished',
          channel: vanished.channel,
          jobId: vanished.jobId,
          step: vanished.step,
          err,
        },
        'Redis no longer has this compaction job (restarted without persistence?): its run in Postgres stands, and the reconciler enqueues it again if it had not finished',
      );
    });
  }

  /** Resolves once the worker is connected. */
  async waitUntilReady(): Promise<void> {
    await this.#worker.waitUntilReady();
  }

  /** Ids of the jobs this worker is running now. */
  get activeJobIds(): readonly string[] {
    return [...this.#active];
  }

  /**
   * Stops taking jobs and waits up to `timeoutMs` for the running ones (see the top of this file for
   * what happens to a job still running then). Safe to call twice. After `'timed_out'` the process
   * should exit: a processor that ignores its signal keeps running until then.
   */
  close(options: { readonly timeoutMs?: number } = {}): Promise<CloseOutcome> {
    this.#closing ??= this.#close(options.timeoutMs ?? DEFAULT_COMPACTION_WORKER_OPTIONS.closeTimeoutMs);
    return this.#closing;
  }

  /**
   * BullMQ's graceful close waits for the passes in hand, then for Redis to answer its last commands
   * and QUITs. Behind a network partition (connections open, nothing answered) that second wait has
   * no end, so it gets as long as `closeRedis` gives a QUIT; then the connections are dropped. The
   * passes in hand are what `timeoutMs` is for. A job fetched just as the close began runs too: the
   * wait goes on while any pass is in hand. A pass that finished during the close while Redis did not
   * answer may not be marked done there: it is named as handed back (it stalls and runs again, and
   * its splice is idempotent on the job id).
   */
  async #close(timeoutMs: number): Promise<CloseOutcome> {
    if (this.#connection.status !== 'ready') return this.#closeWithoutRedis(timeoutMs);
    const graceful = this.#worker.close().catch((err: unknown) => {
      this.#log.warn({ event: 'worker.close_failed', err: toError(err) }, 'compaction worker close failed');
    });
    const deadline = performance.now() + timeoutMs;
    const left = () => Math.max(0, deadline - performance.now());
    while ((await settleWithin(this.#idle(), left())).done) {
      if ((await settleWithin(graceful, QUIT_WAIT_MS)).done) {
        if (this.#ownedConnection) await closeRedis(this.#ownedConnection);
        return 'drained';
      }
      if (this.#active.size > 0) continue;
      // Nothing in hand and Redis not answering: the connections are dropped.
      const unrecorded = [...this.#finishedWhileClosing];
      if (unrecorded.length > 0)
        this.#log.warn(
          { event: 'worker.jobs_handed_back', jobIds: unrecorded, timeoutMs },
          'compaction worker closed with Redis not answering; passes that finished meanwhile may not be marked done there: they stall and run again',
        );
      await this.#worker.disconnect().catch(() => {});
      this.#ownedConnection?.disconnect();
      return unrecorded.length > 0 ? 'timed_out' : 'drained';
    }
    this.#log.warn(
      { event: 'worker.jobs_handed_back', jobIds: this.activeJobIds, timeoutMs },
      'compaction worker closed with jobs still running; they stall and another worker runs them again',
    );
    await this.#worker.disconnect().catch(() => {});
    this.#ownedConnection?.disconnect();
    this.#worker.cancelAllJobs('compaction worker shut down');
    return 'timed_out';
  }

  /** Resolves once no pass is in hand. */
  #idle(): Promise<void> {
    if (this.#active.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const idle = () => {
        this.#onIdle.delete(idle);
        resolve();
      };
      this.#onIdle.add(idle);
    });
  }

  /**
   * BullMQ's graceful close waits for its blocking connection to end, which ioredis never does for a
   * client told to disconnect while it is reconnecting (BullMQ #4585), then quits: with Redis away it
   * never returns, even with no job in hand. So: stop fetching, wait for the jobs in hand here (a
   * pass's work is in Postgres; its job stalls and is looked at again once Redis is back), then let
   * BullMQ close by dropping its connections.
   */
  async #closeWithoutRedis(timeoutMs: number): Promise<CloseOutcome> {
    await this.#worker.pause(true);
    const outcome = (await settleWithin(this.#idle(), timeoutMs)).done ? 'drained' : 'timed_out';
    if (outcome === 'timed_out') {
      this.#log.warn(
        { event: 'worker.jobs_handed_back', jobIds: this.activeJobIds, timeoutMs },
        'compaction worker closed with jobs still running and Redis away; they stall and run again',
      );
      this.#worker.cancelAllJobs('compaction worker shut down');
    }
    // Forced, BullMQ (6.7) drops its connections (disconnect) and waits on nothing from Redis:
    // bullmq-compaction-worker.int.test stops a worker whose Redis is partitioned, connections open
    // and nothing answered, and it returns at once.
    await this.#worker.close(true).catch((err: unknown) => {
      this.#log.warn({ event: 'worker.close_failed', err: toError(err) }, 'compaction worker close failed');
    });
    this.#ownedConnection?.disconnect();
    return outcome;
  }
}

/** Starts a compaction worker on the `compaction` queue; it connects and runs in the background. */
export function startCompactionWorker(options: CompactionWorkerOptions): BullmqCompactionWorker {
  return new BullmqCompactionWorker(options);
}

/** Vanished jobs remembered so each is logged once. */
const MAX_VANISHED_LOGGED = 1_000;

/**
 * A job BullMQ could not move because Redis no longer has it (`Missing key for job <id>. <script>`):
 * Redis restarted without persistence while the job ran. Its pass is in Postgres whatever happened.
 */
function vanishedJob(err: Error): { channel: string; jobId: string; step: string } | undefined {
  const match = /^Missing key for job (\S+)\. (\w+)/.exec(err.message);
  const [, jobId, step] = match ?? [];
  if (jobId === undefined || step === undefined) return undefined;
  // A job id starts with its encoded channel key (`compactionJobId`).
  return { channel: decodeChannelKey(jobId.split('.')[0] ?? ''), jobId, step };
}

function unrecoverable(err: unknown): UnrecoverableError {
  const error = new UnrecoverableError(codedErrorText(err));
  error.cause = err;
  return error;
}
