/**
 * The bot's side of the `compaction` queue: up to `MAX_PASSES_IN_FLIGHT` jobs per channel over
 * disjoint ranges, admitted by core's `admitPass`. Each job holds one of the channel's slots: a BullMQ
 * `deduplication: { id }` per slot (simple mode: the slot is held until the job completes, fails or
 * is removed), so Redis itself says which jobs a channel has in flight.
 *
 * Escalation. A higher tier must not be held back by a lower one. Every enqueue of a channel runs
 * under a short per-channel Redis lock (`withLock`, key `compactionEnqueueLock`) that covers the
 * whole check-and-replace: read the jobs holding the channel's slots and their states; ask
 * `admitPass`; when it says `replace` (a waiting, prioritized or delayed job of a lower tier over an
 * overlapping range), remove that job and add the new one in its slot (`escalated`). A lock rather
 * than a Lua script because the replace is BullMQ's own `remove` and `add` scripts, which we should
 * not copy. The worker side needs no lock: BullMQ's `remove` refuses a job a worker has locked, so a
 * job that became active between our check and our remove is kept and reported `deduplicated`.
 * Concurrent enqueues of one channel (many bots) are serialized by the lock.
 *
 * A trigger over a range a running job covers is dropped (`deduplicated`): the running pass is
 * about to splice, and the channel's monitor decides again on its next turn. (An emergency
 * truncation happens synchronously in the bot; it never waits for this queue.)
 *
 * Fails fast when Redis is down (`RedisUnavailableError`), so the bot can carry on without a job.
 */
import {
  admitPass,
  type CompactionJob,
  type CompactionQueue,
  type EnqueueOptions,
  type EnqueueOutcome,
  type JobState,
  type Logger,
  MAX_PASSES_IN_FLIGHT,
  type PassInFlight,
  SILENT_LOGGER,
} from '@ebb/core';
import { type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  COMPACTION_JOB_NAME,
  COMPACTION_QUEUE_NAME,
  type CompactionJobOptions,
  type CompactionJobPayload,
  CompactionJobPayload as CompactionJobPayloadSchema,
  compactionJobId,
  compactionJobOptions,
  parseCompactionPayload,
  tierPriority,
} from './compaction-jobs.js';
import { traceOfEnqueue } from './job-trace.js';
import { assertRedisReady } from './redis-connection.js';
import { type RedisKeys, redisKeys } from './redis-keys.js';
import { type LockOptions, withLock } from './with-lock.js';

export interface BullmqCompactionQueueOptions {
  /** A `producer` connection (`createRedis(url, { role: 'producer' })`); the caller closes it after `close()`. */
  readonly connection: Redis;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  readonly jobOptions?: Partial<CompactionJobOptions>;
  readonly lock?: Partial<LockOptions>;
  readonly logger?: Logger;
}

type PendingState = 'waiting' | 'prioritized' | 'delayed' | 'waiting-children';
const PENDING: ReadonlySet<string> = new Set<PendingState>([
  'waiting',
  'prioritized',
  'delayed',
  'waiting-children',
]);

export class BullmqCompactionQueue implements CompactionQueue {
  readonly #redis: Redis;
  readonly #keys: RedisKeys;
  readonly #queue: Queue<CompactionJobPayload, unknown, typeof COMPACTION_JOB_NAME>;
  readonly #jobOptions: CompactionJobOptions;
  readonly #lock: Partial<LockOptions>;

  constructor(options: BullmqCompactionQueueOptions) {
    const log = options.logger ?? SILENT_LOGGER;
    this.#redis = options.connection;
    this.#keys = redisKeys(options.prefix);
    this.#jobOptions = compactionJobOptions(options.jobOptions);
    this.#lock = options.lock ?? {};
    this.#queue = new Queue(COMPACTION_QUEUE_NAME, {
      connection: options.connection,
      prefix: this.#keys.bullmqPrefix,
      skipWaitingForReady: true,
    });
    this.#queue.on('error', (err) =>
      log.warn(
        { event: 'queue.connection_failed', err, queue: COMPACTION_QUEUE_NAME },
        'compaction queue error',
      ),
    );
  }

  /** The BullMQ queue itself, for the `/admin/queues` board and `ebb status`. */
  get bullmq(): Queue<CompactionJobPayload, unknown, typeof COMPACTION_JOB_NAME> {
    return this.#queue;
  }

  async enqueue(job: CompactionJob, options: EnqueueOptions = {}): Promise<EnqueueOutcome> {
    const payload = parseCompactionPayload(job);
    assertRedisReady(this.#redis, `enqueue a compaction of ${payload.channelKey}`);
    return withLock(
      this.#redis,
      this.#keys.compactionEnqueueLock(payload.channelKey),
      () => this.#enqueueLocked(payload, options.delayMs ?? 0),
      this.#lock,
    );
  }

  async inFlight(channelKey: string): Promise<readonly PassInFlight[]> {
    assertRedisReady(this.#redis, `check the compaction queue of ${channelKey}`);
    return (await this.#slots(channelKey)).flatMap((s) => (s.pass ? [s.pass] : [])).sort(byRange);
  }

  async jobState(jobId: string): Promise<JobState> {
    assertRedisReady(this.#redis, `read the state of compaction job ${jobId}`);
    const state = await this.#queue.getJobState(jobId);
    if (state === 'active' || state === 'completed' || state === 'failed') return state;
    return PENDING.has(state) ? 'pending' : 'missing';
  }

  /** Closes the BullMQ queue; the connection stays open (it is the caller's). */
  async close(): Promise<void> {
    await this.#queue.close();
  }

  async #enqueueLocked(payload: CompactionJobPayload, delayMs: number): Promise<EnqueueOutcome> {
    const jobId = compactionJobId(payload);
    const slots = await this.#slots(payload.channelKey);
    const live = slots.flatMap((s) => (s.pass ? [s.pass] : []));
    if (live.some((p) => p.jobId === jobId)) return { kind: 'deduplicated', jobId };

    const admission = admitPass(live.sort(byRange), payload);
    if (admission.kind === 'deduplicated') return admission;
    const slot =
      admission.kind === 'replace'
        ? slots.find((s) => s.pass?.jobId === admission.jobId)
        : slots.find((s) => s.pass === undefined);
    if (slot === undefined) return { kind: 'deduplicated', jobId: live[0]?.jobId ?? jobId };
    if (admission.kind === 'replace') {
      // 0: a worker locked it after we looked; it runs, and this trigger is dropped like any during a run.
      if ((await this.#queue.remove(admission.jobId)) !== 1)
        return { kind: 'deduplicated', jobId: admission.jobId };
    } else if (slot.holderId !== null) {
      // The holder finished or vanished but the slot is still taken: free it (only we write it, under this lock).
      await this.#queue.removeDeduplicationKey(slot.dedupeId);
    }

    // A finished job with this very id (kept by removeOnComplete/removeOnFail) would make BullMQ
    // ignore the add; the same trigger again means "run it again", so make room.
    const previous = await this.#queue.getJobState(jobId);
    if (previous === 'completed' || previous === 'failed') await this.#queue.remove(jobId);
    else if (previous !== 'unknown') return { kind: 'deduplicated', jobId };

    const added = await this.#add(payload, jobId, slot.dedupeId, delayMs);
    if (added !== jobId) return { kind: 'deduplicated', jobId: added };
    return admission.kind === 'replace'
      ? { kind: 'escalated', jobId, replacedJobId: admission.jobId }
      : { kind: 'enqueued', jobId };
  }

  /** Each of the channel's slots: the job holding it, and that job as a pass when it is waiting or running. */
  async #slots(channelKey: string): Promise<Slot[]> {
    const slots: Slot[] = [];
    for (let slot = 0; slot < MAX_PASSES_IN_FLIGHT; slot++) {
      const dedupeId = this.#keys.compactionDedupeId(channelKey, slot);
      const holderId = await this.#queue.getDeduplicationJobId(dedupeId);
      const holder = holderId === null ? undefined : await this.#queue.getJob(holderId);
      const state = holder ? await holder.getState() : 'unknown';
      const pass = holder && (state === 'active' || PENDING.has(state)) ? toPass(holder, state) : undefined;
      slots.push({ dedupeId, holderId, ...(pass ? { pass } : {}) });
    }
    return slots;
  }

  /** Adds the job; returns the id BullMQ answers with (another job's id when it deduplicated). */
  async #add(
    payload: CompactionJobPayload,
    jobId: string,
    dedupeId: string,
    delayMs: number,
  ): Promise<string> {
    const o = this.#jobOptions;
    // The turn that queued it, for the pass's span in the worker (none with tracing off).
    const trace = traceOfEnqueue();
    const data = trace === undefined ? payload : { ...payload, trace };
    const job = await this.#queue.add(COMPACTION_JOB_NAME, data, {
      jobId,
      deduplication: { id: dedupeId },
      ...(delayMs > 0 ? { delay: delayMs } : {}),
      priority: tierPriority(payload.tier),
      attempts: o.attempts,
      backoff: { ...o.backoff },
      removeOnComplete: { ...o.removeOnComplete },
      removeOnFail: { ...o.removeOnFail },
    });
    return job.id ?? jobId;
  }
}

interface Slot {
  readonly dedupeId: string;
  readonly holderId: string | null;
  readonly pass?: PassInFlight;
}

/** A stored job as a pass; a job whose data does not parse ranks below everything and covers nothing. */
function toPass(job: Job, state: string): PassInFlight | undefined {
  const parsed = CompactionJobPayloadSchema.safeParse(job.data);
  if (!parsed.success || job.id === undefined) return undefined;
  const { tier, fromSeq, toSeq } = parsed.data;
  return { jobId: job.id, tier, fromSeq, toSeq, running: state === 'active' };
}

function byRange(a: PassInFlight, b: PassInFlight): number {
  return a.fromSeq - b.fromSeq;
}
