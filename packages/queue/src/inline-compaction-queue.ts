/**
 * The compaction queue of embedded mode (no Redis): runs the same processor in this process with the
 * same rules as `BullmqCompactionQueue` + `BullmqCompactionWorker`.
 *
 * - Up to `MAX_PASSES_IN_FLIGHT` jobs per channel over disjoint ranges, admitted by core's
 *   `admitPass`: an overlapping trigger is `deduplicated`, or replaces a waiting job of a lower tier
 *   (also one waiting out a retry backoff or a cooldown delay) and is `escalated`. State lives in one
 *   map touched only synchronously, so there is no race to guard.
 * - `enqueue` returns at once (or after `delayMs` for a cooldown); jobs start on a later turn of the
 *   event loop, most urgent tier first, at most `concurrency` at a time.
 * - Retries like the worker: `retryable === false` ends the job, anything else is retried after
 *   BullMQ's exponential backoff until `attempts` run out; a provider's Retry-After
 *   (`providerWaitMs`) is waited out without spending an attempt; so is a `PassDeferredError` (a follow-up waiting
 *   for the pass ahead of it) runs again after its `retryAfterMs` without spending an attempt. A bad
 *   payload is rejected by `enqueue`.
 * - Nothing survives a restart: a pass whose run was left `queued` or `running` is enqueued again
 *   by the reconciler (`jobState` says `missing`), and the channel's monitor triggers again when it
 *   is still over a threshold. `close()` drops jobs that have not started and waits for running ones; call
 *   `drain()` first to finish everything.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleepFor } from 'node:timers/promises';
import {
  admitPass,
  type CompactionJob,
  type CompactionQueue,
  type EnqueueOptions,
  type EnqueueOutcome,
  isRetryable,
  type JobState,
  type Logger,
  PassDeferredError,
  type PassInFlight,
  SILENT_LOGGER,
  tierRank,
} from '@ebb/core';
import {
  type CompactionJobOptions,
  type CompactionJobPayload,
  compactionJobId,
  compactionJobOptions,
  parseCompactionPayload,
  retryDelayMs,
} from './compaction-jobs.js';
import { QueueError } from './errors.js';
import { type CompactionEvents, type CompactionProcessor, providerWaitMs, toError } from './job-driver.js';
import { inPassSpan, traceOfEnqueue } from './job-trace.js';

export interface InlineCompactionQueueOptions {
  readonly processor: CompactionProcessor;
  /** Jobs (of different channels) run at once. */
  readonly concurrency?: number;
  readonly jobOptions?: Partial<Pick<CompactionJobOptions, 'attempts' | 'backoff'>>;
  /** Waits out a retry backoff; resolves or rejects early when `signal` aborts. Injectable for tests. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Source of backoff jitter. */
  readonly random?: () => number;
  readonly logger?: Logger;
}

export const DEFAULT_INLINE_COMPACTION_QUEUE_OPTIONS = { concurrency: 1 } as const;

interface Entry {
  readonly jobId: string;
  readonly payload: CompactionJobPayload;
  /** Order of arrival, for first-come-first-served within a tier. */
  readonly order: number;
  readonly controller: AbortController;
  /** When it was queued (ms since the epoch), for its span's queue wait. */
  readonly createdAt: number;
  state: 'waiting' | 'delayed' | 'active';
  /** Attempts started. */
  attempt: number;
}

const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> => sleepFor(ms, undefined, { signal });

export class InlineCompactionQueue extends EventEmitter<CompactionEvents> implements CompactionQueue {
  readonly #processor: CompactionProcessor;
  readonly #concurrency: number;
  readonly #jobOptions: CompactionJobOptions;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #random: () => number;
  readonly #log: Logger;
  /** Each channel's jobs waiting, delayed or running. */
  readonly #byChannel = new Map<string, Entry[]>();
  #ready: Entry[] = [];
  #running = 0;
  #arrivals = 0;
  #closed = false;
  #idle: Array<() => void> = [];

  constructor(options: InlineCompactionQueueOptions) {
    super();
    this.#processor = options.processor;
    this.#concurrency = options.concurrency ?? DEFAULT_INLINE_COMPACTION_QUEUE_OPTIONS.concurrency;
    this.#jobOptions = compactionJobOptions(options.jobOptions);
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
    this.#log = options.logger ?? SILENT_LOGGER;
  }

  async enqueue(job: CompactionJob, options: EnqueueOptions = {}): Promise<EnqueueOutcome> {
    const payload = parseCompactionPayload(job);
    if (this.#closed) throw new QueueError('the compaction queue is closed', { code: 'queue_closed' });
    const jobId = compactionJobId(payload);
    const entries = this.#byChannel.get(payload.channelKey) ?? [];
    const same = entries.find((e) => e.jobId === jobId);
    if (same) return { kind: 'deduplicated', jobId };
    const admission = admitPass(entries.map(passInFlight), payload);
    switch (admission.kind) {
      case 'deduplicated':
        return admission;
      case 'replace': {
        const replaced = entries.find((e) => e.jobId === admission.jobId);
        if (replaced) this.#drop(replaced);
        this.#add(payload, jobId, options.delayMs ?? 0);
        return { kind: 'escalated', jobId, replacedJobId: admission.jobId };
      }
      case 'add':
        this.#add(payload, jobId, options.delayMs ?? 0);
        return { kind: 'enqueued', jobId };
    }
  }

  async inFlight(channelKey: string): Promise<readonly PassInFlight[]> {
    return (this.#byChannel.get(channelKey) ?? []).map(passInFlight).sort((a, b) => a.fromSeq - b.fromSeq);
  }

  /** A finished job is forgotten: `missing`, like a job that never was. */
  async jobState(jobId: string): Promise<JobState> {
    for (const entries of this.#byChannel.values()) {
      const entry = entries.find((e) => e.jobId === jobId);
      if (entry) return entry.state === 'active' ? 'active' : 'pending';
    }
    return 'missing';
  }

  /** Resolves when no job waits, backs off or runs. */
  drain(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Refuses new jobs, drops the ones not running, and waits for the running ones. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const entry of [...this.#byChannel.values()].flat()) {
      if (entry.state !== 'active') this.#drop(entry);
    }
    this.#settle();
    await this.drain();
  }

  #add(job: CompactionJobPayload, jobId: string, delayMs: number): void {
    // The turn that queued it, for the pass's span (none with tracing off).
    const trace = traceOfEnqueue();
    const payload = trace === undefined ? job : { ...job, trace };
    const entry: Entry = {
      jobId,
      payload,
      order: this.#arrivals++,
      controller: new AbortController(),
      createdAt: Date.now(),
      state: 'waiting',
      attempt: 0,
    };
    this.#byChannel.set(payload.channelKey, [...(this.#byChannel.get(payload.channelKey) ?? []), entry]);
    if (delayMs > 0) {
      entry.state = 'delayed';
      void this.#readyAfter(entry, delayMs);
      return;
    }
    this.#ready.push(entry);
    setImmediate(() => this.#pump());
  }

  #drop(entry: Entry): void {
    entry.controller.abort();
    this.#ready = this.#ready.filter((e) => e !== entry);
    this.#remove(entry);
  }

  #remove(entry: Entry): void {
    const key = entry.payload.channelKey;
    const rest = (this.#byChannel.get(key) ?? []).filter((e) => e !== entry);
    if (rest.length > 0) this.#byChannel.set(key, rest);
    else this.#byChannel.delete(key);
  }

  #holds(entry: Entry): boolean {
    return this.#byChannel.get(entry.payload.channelKey)?.includes(entry) ?? false;
  }

  #pump(): void {
    while (!this.#closed && this.#running < this.#concurrency && this.#ready.length > 0) {
      const next = this.#ready.reduce((best, e) => (mostUrgent(e, best) ? e : best));
      this.#ready = this.#ready.filter((e) => e !== next);
      void this.#run(next);
    }
  }

  async #run(entry: Entry): Promise<void> {
    entry.state = 'active';
    entry.attempt += 1;
    this.#running += 1;
    const { payload, jobId, attempt } = entry;
    const event = { jobId, channelKey: payload.channelKey, tier: payload.tier, attempt };
    try {
      const lastAttempt = attempt >= this.#jobOptions.attempts;
      const { trace: _trace, ...pass } = payload;
      const started = { attempt, createdAt: entry.createdAt, startedAt: Date.now() };
      const result = await inPassSpan(payload, started, () =>
        this.#processor({ ...pass, jobId, attempt, lastAttempt }, entry.controller.signal),
      );
      this.#finish(entry);
      this.#emit('completed', { ...event, result });
    } catch (err) {
      const wait = err instanceof PassDeferredError ? err.retryAfterMs : providerWaitMs(err);
      if (wait !== undefined && !this.#closed && !entry.controller.signal.aborted) {
        // Not a failure: the pass waits for the one ahead of it, or for a busy provider; the attempt is not spent.
        entry.attempt -= 1;
        entry.state = 'delayed';
        void this.#readyAfter(entry, wait);
        return;
      }
      const willRetry =
        isRetryable(err) &&
        attempt < this.#jobOptions.attempts &&
        !this.#closed &&
        !entry.controller.signal.aborted;
      if (willRetry) entry.state = 'delayed';
      else this.#finish(entry);
      this.#emit('failed', { ...event, error: toError(err), willRetry });
      if (willRetry) void this.#retryLater(entry);
    } finally {
      this.#running -= 1;
      this.#pump();
      this.#settle();
    }
  }

  async #retryLater(entry: Entry): Promise<void> {
    await this.#readyAfter(entry, retryDelayMs(this.#jobOptions.backoff, entry.attempt, this.#random));
  }

  /** Puts a delayed entry back in line after `ms` (a retry backoff, a cooldown, a deferral). */
  async #readyAfter(entry: Entry, ms: number): Promise<void> {
    try {
      await this.#sleep(ms, entry.controller.signal);
    } catch {
      // Aborted: the entry was replaced by a more urgent job or the queue closed.
    }
    if (entry.controller.signal.aborted || !this.#holds(entry)) {
      this.#settle();
      return;
    }
    entry.state = 'waiting';
    this.#ready.push(entry);
    this.#pump();
  }

  #finish(entry: Entry): void {
    this.#remove(entry);
  }

  #isIdle(): boolean {
    return this.#byChannel.size === 0 && this.#running === 0;
  }

  #settle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idle;
    this.#idle = [];
    for (const resolve of waiters) resolve();
  }

  #emit<K extends keyof CompactionEvents>(event: K, ...args: CompactionEvents[K]): void {
    try {
      this.emit(event, ...(args as never));
    } catch (err) {
      this.#log.error({ err, event }, 'compaction event listener threw');
    }
  }
}

function passInFlight(entry: Entry): PassInFlight {
  const { payload } = entry;
  return {
    jobId: entry.jobId,
    tier: payload.tier,
    fromSeq: payload.fromSeq,
    toSeq: payload.toSeq,
    running: entry.state === 'active',
  };
}

/** Whether `a` runs before `b`: higher tier first, then first come. */
function mostUrgent(a: Entry, b: Entry): boolean {
  const byTier = tierRank(a.payload.tier) - tierRank(b.payload.tier);
  return byTier !== 0 ? byTier > 0 : a.order < b.order;
}
