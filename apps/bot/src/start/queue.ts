/**
 * The queue part: BullMQ over Redis when Redis answers and a worker can reach this database (with
 * the worker itself in this process for `ebb dev`), else the in-process pipeline (announced); and
 * what goes with it: the context notifier, the spool where Slack and Discord messages wait while
 * Postgres is away, and the answer claims, channel leases and append feed of replicas. Its connections close at
 * stop.
 */
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';

import { CLOSE_BEYOND_PASSES_MS, createEmbeddedPipeline, runCompactionWorker } from '@ebb/compaction';
import { DEFAULT_REDIS_URL } from '@ebb/config';
import {
  type AnswerClaims,
  type AppendFeed,
  type ChannelLeases,
  type CompactionEventSink,
  type CompactionQueue,
  type ContextNotifier,
  DEFAULT_RETRYING_USAGE,
  type InboundSpool,
  SHUTDOWN_STEP_MS,
  type ShutdownSteps,
} from '@ebb/core';
import type { Database } from '@ebb/db';
import { bullmqQueueStats, meteredSummarizer, redisCheck, tracedSummarizer } from '@ebb/observability';
import {
  BullmqCompactionQueue,
  closeRedis,
  createRedis,
  describeRedisUrl,
  isRedisReachable,
  RedisAnswerClaims,
  RedisAppendFeed,
  RedisChannelLeases,
  RedisContextNotifier,
  RedisInboundSpool,
  waitForReady,
} from '@ebb/queue';
import type { BoardQueue } from '@ebb/web';
import { FallbackInboundSpool } from '../bot/fallback-inbound-spool.js';
import { FileInboundSpool } from '../bot/file-inbound-spool.js';
import type { Observability } from './observability.js';
import { llmRetry, type StartOptions } from './options.js';

export interface RunningQueue {
  readonly queue: CompactionQueue;
  readonly notifier: ContextNotifier;
  readonly spool: InboundSpool;
  /** Who answers a message when replicas share Redis (one process needs none). */
  readonly claims?: AnswerClaims;
  /** One turn at a time per channel when replicas share Redis (one process needs none). */
  readonly leases?: ChannelLeases;
  /** Replicas' appends, so their cached copies of a channel follow each other (one process needs none). */
  readonly appends?: AppendFeed;
  /** BullMQ's queue, for the dashboard's board. */
  readonly board?: BoardQueue;
  /** The in-process queue is in use (no Redis, or an embedded database with no worker here). */
  readonly embedded: boolean;
}

export interface QueueParts {
  readonly database: Database;
  readonly observability: Observability;
  readonly onEvent: CompactionEventSink;
}

/** The prefix Ebb's keys and queue take when none is set (`EBB_REDIS_PREFIX`). */
const DEFAULT_REDIS_PREFIX = 'ebb';

/**
 * The Redis key prefix: `EBB_REDIS_PREFIX`; but on the embedded database, where it is left at its
 * default, one of this data directory's own (`ebb-` and a hash of its path), so two developers'
 * `npm start` on one machine's Redis share no queue, and no pass of one lands in the other's database.
 */
export function redisPrefixOf(
  env: Pick<StartOptions['env'], 'EBB_REDIS_PREFIX' | 'EBB_DATA_DIR'>,
  embeddedDatabase: boolean,
): string {
  if (!embeddedDatabase || env.EBB_REDIS_PREFIX !== DEFAULT_REDIS_PREFIX) return env.EBB_REDIS_PREFIX;
  return `ebb-${createHash('sha256').update(resolve(env.EBB_DATA_DIR)).digest('hex').slice(0, 12)}`;
}

export async function startQueue(
  options: StartOptions,
  parts: QueueParts,
  steps: ShutdownSteps,
): Promise<RunningQueue> {
  const { env } = options;
  const redisUrl = env.REDIS_URL ?? DEFAULT_REDIS_URL;
  const embeddedDatabase = parts.database.kind === 'pglite';
  const useRedis = (!embeddedDatabase || options.withWorker) && (await isRedisReachable(redisUrl, 1_000));
  // Where Slack and Discord messages wait while Postgres is away: Redis, and a local file when
  // Redis cannot take them either (or there is no Redis).
  const localSpool = new FileInboundSpool(join(env.EBB_DATA_DIR, 'spool.jsonl'));
  if (useRedis) {
    const prefix = redisPrefixOf(env, embeddedDatabase);
    options.logger.info(
      { event: 'queue.joined', redis: describeRedisUrl(redisUrl), prefix },
      `compaction passes go through Redis at ${describeRedisUrl(redisUrl)}, under the key prefix ${prefix}`,
    );
    return redisQueue(options, parts, { redisUrl, localSpool, prefix }, steps);
  }
  options.logger.info(
    { event: 'ebb.fallback', part: 'queue' },
    embeddedDatabase && !options.withWorker
      ? 'embedded database: compaction passes run in this process (in-process queue)'
      : `no Redis at ${describeRedisUrl(redisUrl)}: compaction passes run in this process (in-process queue)`,
  );
  const { metrics } = parts.observability;
  const pipeline = createEmbeddedPipeline({
    config: options.config,
    env,
    database: parts.database,
    onEvent: parts.onEvent,
    logger: options.logger,
    wrapSummarizer: (s) => tracedSummarizer(meteredSummarizer(s, metrics.onLlmCalls)),
    ...llmRetry(options),
  });
  // Its passes drain, then the usage the database could not take gets its last try.
  steps.add(() => pipeline.close(), SHUTDOWN_STEP_MS + DEFAULT_RETRYING_USAGE.closeMs);
  return { queue: pipeline.queue, notifier: pipeline.notifier, spool: localSpool, embedded: true };
}

async function redisQueue(
  options: StartOptions,
  parts: QueueParts,
  where: { readonly redisUrl: string; readonly localSpool: FileInboundSpool; readonly prefix: string },
  steps: ShutdownSteps,
): Promise<RunningQueue> {
  const { env, logger } = options;
  const { metrics, checks } = parts.observability;
  const { redisUrl, localSpool, prefix } = where;
  const producer = createRedis(redisUrl, { role: 'producer', logger });
  steps.add(() => closeRedis(producer));
  await waitForReady(producer);
  const bullmq = new BullmqCompactionQueue({ connection: producer, prefix, logger });
  steps.add(() => bullmq.close());
  checks.redis = redisCheck(producer);
  metrics.observeQueue(bullmqQueueStats(bullmq.bullmq));
  const notifier = RedisContextNotifier.connect(redisUrl, { prefix, logger });
  steps.add(() => notifier.close());
  const spool = new FallbackInboundSpool(new RedisInboundSpool({ connection: producer, prefix }), localSpool);
  const claims = new RedisAnswerClaims({ connection: producer, prefix });
  const leaseSubscriber = createRedis(redisUrl, {
    role: 'subscriber',
    logger,
    connectionName: 'ebb-leases-sub',
  });
  steps.add(() => closeRedis(leaseSubscriber));
  const leases = new RedisChannelLeases({ connection: producer, subscriber: leaseSubscriber, prefix });
  steps.add(() => leases.close());
  // On the leases' connections: a replica woken for a channel's lease has heard the turn before it.
  const appends = new RedisAppendFeed({ publisher: producer, subscriber: leaseSubscriber, prefix, logger });
  steps.add(() => appends.close());
  if (options.withWorker) {
    const worker = await runCompactionWorker({
      config: options.config,
      env,
      database: parts.database,
      redisUrl,
      redisPrefix: prefix,
      logger,
      metrics,
      ...llmRetry(options),
    });
    // Lets the jobs in hand finish, or hands them back after 10 s.
    steps.add(() => worker.close(10_000), 10_000 + CLOSE_BEYOND_PASSES_MS);
  }
  return { queue: bullmq, notifier, spool, claims, leases, appends, board: bullmq.bullmq, embedded: false };
}
