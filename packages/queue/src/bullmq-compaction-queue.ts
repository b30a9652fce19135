/**
 * The bot's side of the `compaction` queue: at most one job per channel, deduplicated on the channel
 * key with BullMQ `deduplication: { id }` (simple mode: the slot is held until the job completes,
 * fails or is removed).
 *
 * Escalation. An aggressive or emergency trigger must not be lost behind a lower-tier job that is
 * still waiting. Every enqueue of a channel runs under a short per-channel Redis lock (`withLock`,
 * key `compactionEnqueueLock`) that covers the whole check-and-replace: read the job holding the
 * channel's dedupe slot and its state; if it has not started (waiting, prioritized, or delayed for a
 * retry) and its tier ranks lower, remove it and add the new job (`escalated`). A lock rather than a
 * Lua script because the replace is BullMQ's own `remove` and `add` scripts, which we should not
 * copy. The worker side needs no lock: BullMQ's `remove` refuses a job a worker has locked, so a
 * job that became active between our check and our remove is kept and reported `deduplicated`.
 * Concurrent enqueues of one channel (many bots) are serialized by the lock, so they never add two
 * jobs for one channel.
 *
 * A trigger that arrives while the channel's job is active is dropped on purpose
 * (`deduplicated`): the running pass is about to splice, and the channel's monitor re-evaluates the
 * usage on its next turn and triggers again if it is still above a threshold. (An emergency
 * truncation happens synchronously in the bot; it never waits for this queue.)
 *
 * Fails fast when Redis is down (`RedisUnavailableError`), so the bot can carry on without a job.
 */
import type { CompactionJob, CompactionQueue, EnqueueOutcome } from '@ebb/core';
import { Queue } from 'bullmq';
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
  tierRank,
} from './compaction-jobs.js';
import { type QueueLogger, silentLogger } from './queue-logger.js';
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
  readonly logger?: QueueLogger;
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
    const log = options.logger ?? silentLogger;
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
      log.warn({ err, queue: COMPACTION_QUEUE_NAME }, 'compaction queue error'),
    );
  }

  /** The BullMQ queue itself, for the `/admin/queues` board and `ebb status`. */
  get bullmq(): Queue<CompactionJobPayload, unknown, typeof COMPACTION_JOB_NAME> {
    return this.#queue;
  }

  async enqueue(job: CompactionJob): Promise<EnqueueOutcome> {
    const payload = parseCompactionPayload(job);
    assertRedisReady(this.#redis, `enqueue a compaction of ${payload.channelKey}`);
    return withLock(
      this.#redis,
      this.#keys.compactionEnqueueLock(payload.channelKey),
      () => this.#enqueueLocked(payload),
      this.#lock,
    );
  }

  async inFlight(channelKey: string): Promise<boolean> {
    assertRedisReady(this.#redis, `check the compaction queue of ${channelKey}`);
    const holderId = await this.#queue.getDeduplicationJobId(this.#keys.compactionDedupeId(channelKey));
    if (holderId === null) return false;
    const state = await this.#queue.getJobState(holderId);
    return state === 'active' || PENDING.has(state);
  }

  /** Closes the BullMQ queue; the connection stays open (it is the caller's). */
  async close(): Promise<void> {
    await this.#queue.close();
  }

  async #enqueueLocked(payload: CompactionJobPayload): Promise<EnqueueOutcome> {
    const jobId = compactionJobId(payload);
    const dedupeId = this.#keys.compactionDedupeId(payload.channelKey);
    const holderId = await this.#queue.getDeduplicationJobId(dedupeId);

    if (holderId !== null) {
      const holder = await this.#queue.getJob(holderId);
      const state = holder ? await holder.getState() : 'unknown';
      if (state === 'active') return { kind: 'deduplicated', jobId: holderId };
      if (PENDING.has(state)) {
        if (tierRank(payload.tier) <= rankOf(holder?.data)) return { kind: 'deduplicated', jobId: holderId };
        // 0: a worker locked it after we looked; it runs, this trigger is dropped like any during a run.
        if ((await this.#queue.remove(holderId)) !== 1) return { kind: 'deduplicated', jobId: holderId };
        const added = await this.#add(payload, jobId, dedupeId);
        return added === jobId
          ? { kind: 'escalated', jobId, replacedJobId: holderId }
          : { kind: 'deduplicated', jobId: added };
      }
      // The holder finished or vanished but its slot is still taken: free it (only we write it, under this lock).
      await this.#queue.removeDeduplicationKey(dedupeId);
    }

    // A finished job with this very id (kept by removeOnComplete/removeOnFail) would make BullMQ
    // ignore the add; the same trigger again means "run it again", so make room.
    const previous = await this.#queue.getJobState(jobId);
    if (previous === 'completed' || previous === 'failed') await this.#queue.remove(jobId);
    else if (previous !== 'unknown') return { kind: 'deduplicated', jobId };

    const added = await this.#add(payload, jobId, dedupeId);
    return added === jobId ? { kind: 'enqueued', jobId } : { kind: 'deduplicated', jobId: added };
  }

  /** Adds the job; returns the id BullMQ answers with (another job's id when it deduplicated). */
  async #add(payload: CompactionJobPayload, jobId: string, dedupeId: string): Promise<string> {
    const o = this.#jobOptions;
    const job = await this.#queue.add(COMPACTION_JOB_NAME, payload, {
      jobId,
      deduplication: { id: dedupeId },
      priority: tierPriority(payload.tier),
      attempts: o.attempts,
      backoff: { ...o.backoff },
      removeOnComplete: { ...o.removeOnComplete },
      removeOnFail: { ...o.removeOnFail },
    });
    return job.id ?? jobId;
  }
}

/** Rank of a stored job's tier; a job whose data does not parse ranks below everything. */
function rankOf(data: unknown): number {
  const parsed = CompactionJobPayloadSchema.safeParse(data);
  return parsed.success ? tierRank(parsed.data.tier) : -1;
}
