/**
 * Every Redis key and pub/sub channel Ebb uses, built from one prefix (default `ebb`; tests use a
 * random one per test). Nothing else in the repo spells a key. `<p>` is the prefix, `<ch>` a channel
 * key encoded by `encodeChannelKey` (`slack:T1:C1` → `slack%3AT1%3AC1`).
 *
 * | key or channel                       | type          | owner                 | holds |
 * | ------------------------------------ | ------------- | --------------------- | ----- |
 * | `<p>:compaction:*`                   | BullMQ        | BullMQ (prefix `<p>`) | the `compaction` queue: `wait`, `active`, `prioritized`, `delayed`, `completed`, `failed`, `stalled`, `stalled-check`, `events`, `meta`, `id`, `marker`, `limiter`, and per job `<p>:compaction:<jobId>` (+ `:lock`, `:logs`) |
 * | `<p>:compaction:de:<ch>`             | string        | BullMQ deduplication  | id of the job holding the channel's first slot; gone when that job completes, fails or is removed |
 * | `<p>:compaction:de:<ch>.<n>`         | string        | BullMQ deduplication  | the same for slot n (2..`MAX_PASSES_IN_FLIGHT`): a follow-up pass over the next range |
 * | `<p>:lock:compaction-enqueue:<ch>`   | string, PX 5s | `BullmqCompactionQueue` | random token; held only around the dedupe check-and-replace of one enqueue |
 * | `<p>:context-changed`                | pub/sub       | `RedisContextNotifier` | `{"channelKey":…,"generation":…}` after a splice or truncation |
 * | `<p>:context-appended`               | pub/sub       | `RedisAppendFeed`     | `{"from":…,"channelKey":…,"appended":…}`: a replica's appends as the working context holds them, so the others' copies follow without a read |
 * | `<p>:spool:<ch>`                     | stream        | `RedisInboundSpool`   | chat messages (field `m`, JSON) kept while Postgres is away, until replayed into the archive |
 * | `<p>:spool-channels`                 | set           | `RedisInboundSpool`   | channel keys with a spool stream |
 * | `<p>:spool-dead`                     | stream        | `RedisInboundSpool`   | spooled messages the archive refused for good (fields `channel`, `id`, `reason`, `m`, `at`), kept for an operator |
 * | `<p>:answer-claim:<ch>:<id>`         | string, PX 5s | `RedisAnswerClaims`   | random token of the turn answering message `<id>` (URI-encoded platform id), renewed while it runs; so two deliveries never both answer |
 * | `<p>:channel-lease:<ch>`             | string, PX 3s | `RedisChannelLeases`  | `<token>:<fence>` of the turn running in the channel (one at a time across replicas), renewed while it runs |
 * | `<p>:channel-fence:<ch>`             | string, PX 1d | `RedisChannelLeases`  | the last fence given out: the next is `max(it + 1, Redis TIME in µs)`, so it grows even past a Redis restarted empty |
 * | `<p>:channel-lease-queue:<ch>`       | zset, PX 3s   | `RedisChannelLeases`  | waiting tokens by ticket (the tail's + 1): first come, first served; the key expires with its last waiter |
 * | `<p>:channel-lease-deadlines:<ch>`   | zset, PX 3s   | `RedisChannelLeases`  | the same tokens by the Redis time (ms) they are dropped at unless their waiter refreshes them: a dead waiter blocks no one |
 * | `<p>:channel-lease-released`         | pub/sub       | `RedisChannelLeases`  | a channel key, when its lease is released or its head waiter left with waiters behind it |
 *
 * Redis carries ids, ranges and generations, and message text only in the spool, only while
 * Postgres is away, and in flight on `<p>:context-appended` (pub/sub stores nothing).
 */

import { COMPACTION_QUEUE_NAME, encodeChannelKey } from './compaction-jobs.js';
import { QueueError } from './errors.js';

export const DEFAULT_REDIS_PREFIX = 'ebb';

export interface RedisKeys {
  readonly prefix: string;
  /** The `prefix` option of every BullMQ `Queue` and `Worker`. */
  readonly bullmqPrefix: string;
  /** Pub/sub channel of context changes. */
  readonly contextChanged: string;
  /** Pub/sub channel of appends, for the other replicas' cached copies. */
  readonly contextAppended: string;
  /** A pattern matching every key above (for cleanup with SCAN). */
  readonly everything: string;
  /** BullMQ `deduplication.id` of one of a channel's compaction slots (slot 0 first). */
  compactionDedupeId(channelKey: string, slot?: number): string;
  /** The key BullMQ stores that dedupe id under (read-only for us; BullMQ writes it). */
  compactionDedupeKey(channelKey: string, slot?: number): string;
  /** The lock a worker holds on a compaction job while it runs it (BullMQ's; tests expire it). */
  compactionJobLock(jobId: string): string;
  /** The mark that holds off other workers' stalled-job checks (BullMQ's; tests expire it). */
  readonly compactionStalledCheck: string;
  /** The per-channel lock taken around the check-and-replace of an enqueue. */
  compactionEnqueueLock(channelKey: string): string;
  /** A channel's inbound spool stream. */
  spool(channelKey: string): string;
  /** The set of channels with a spool stream. */
  readonly spoolChannels: string;
  /** Spooled messages the archive refused for good. */
  readonly spoolDeadLetters: string;
  /** The claim of the turn answering one message. */
  answerClaim(channelKey: string, platformMessageId: string): string;
  /** The lease of the turn running in a channel. */
  channelLease(channelKey: string): string;
  /** The last fence given out for a channel's lease. */
  channelFence(channelKey: string): string;
  /** A channel's lease waiters in order (ticket scores). */
  channelLeaseQueue(channelKey: string): string;
  /** A channel's lease waiters by the time (ms) they are dropped at unless refreshed. */
  channelLeaseDeadlines(channelKey: string): string;
  /** Pub/sub channel of released leases (message: the channel key). */
  readonly channelLeaseReleased: string;
}

const PREFIX_PATTERN = /^[A-Za-z0-9_-]+$/;

export function redisKeys(prefix: string = DEFAULT_REDIS_PREFIX): RedisKeys {
  // No ':' (it would blur the key layout) and no glob characters (cleanup matches `<p>:*`).
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new QueueError(`Redis key prefix ${JSON.stringify(prefix)} must match ${PREFIX_PATTERN}`, {
      code: 'invalid_redis_prefix',
    });
  }
  return {
    prefix,
    bullmqPrefix: prefix,
    contextChanged: `${prefix}:context-changed`,
    contextAppended: `${prefix}:context-appended`,
    everything: `${prefix}:*`,
    compactionDedupeId: (channelKey, slot = 0) => dedupeId(channelKey, slot),
    compactionDedupeKey: (channelKey, slot = 0) =>
      `${prefix}:${COMPACTION_QUEUE_NAME}:de:${dedupeId(channelKey, slot)}`,
    compactionJobLock: (jobId) => `${prefix}:${COMPACTION_QUEUE_NAME}:${jobId}:lock`,
    compactionStalledCheck: `${prefix}:${COMPACTION_QUEUE_NAME}:stalled-check`,
    compactionEnqueueLock: (channelKey) =>
      `${prefix}:lock:compaction-enqueue:${encodeChannelKey(channelKey)}`,
    spool: (channelKey) => `${prefix}:spool:${encodeChannelKey(channelKey)}`,
    spoolChannels: `${prefix}:spool-channels`,
    spoolDeadLetters: `${prefix}:spool-dead`,
    answerClaim: (channelKey, platformMessageId) =>
      `${prefix}:answer-claim:${encodeChannelKey(channelKey)}:${encodeURIComponent(platformMessageId)}`,
    channelLease: (channelKey) => `${prefix}:channel-lease:${encodeChannelKey(channelKey)}`,
    channelFence: (channelKey) => `${prefix}:channel-fence:${encodeChannelKey(channelKey)}`,
    channelLeaseQueue: (channelKey) => `${prefix}:channel-lease-queue:${encodeChannelKey(channelKey)}`,
    channelLeaseDeadlines: (channelKey) =>
      `${prefix}:channel-lease-deadlines:${encodeChannelKey(channelKey)}`,
    channelLeaseReleased: `${prefix}:channel-lease-released`,
  };
}

/** Slot 0 keeps the bare channel key (as before slots existed); `.` never occurs in an encoded key. */
function dedupeId(channelKey: string, slot: number): string {
  return slot === 0 ? encodeChannelKey(channelKey) : `${encodeChannelKey(channelKey)}.${slot + 1}`;
}
