/**
 * The queue part: BullMQ over Redis when Redis answers and a worker can reach this database (with
 * the worker itself in this process for `ebb dev`), else the in-process pipeline (announced); and
 * what goes with it: the context notifier, the spool where Slack and Discord messages wait while
 * Postgres is away, and the answer claims of replicas. Its connections close at stop.
 */
import { join } from 'node:path';

import { CLOSE_BEYOND_PASSES_MS, createEmbeddedPipeline, runCompactionWorker } from '@ebb/compaction';
import type {
  AnswerClaims,
  CompactionEventSink,
  CompactionQueue,
  ContextNotifier,
  InboundSpool,
  ShutdownSteps,
} from '@ebb/core';
import type { Database } from '@ebb/db';
import { bullmqQueueStats, meteredSummarizer, redisCheck } from '@ebb/observability';
import {
  BullmqCompactionQueue,
  closeRedis,
  createRedis,
  describeRedisUrl,
  isRedisReachable,
  RedisAnswerClaims,
  RedisContextNotifier,
  RedisInboundSpool,
  waitForReady,
} from '@ebb/queue';
import type { BoardQueue } from '@ebb/web';
import { FallbackInboundSpool, FileInboundSpool } from '../bot/file-inbound-spool.js';
import type { Observability } from './observability.js';
import { llmRetry, type StartOptions } from './options.js';

export interface RunningQueue {
  readonly queue: CompactionQueue;
  readonly notifier: ContextNotifier;
  readonly spool: InboundSpool;
  /** Who answers a message when replicas share Redis (one process needs none). */
  readonly claims?: AnswerClaims;
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

export async function startQueue(
  options: StartOptions,
  parts: QueueParts,
  steps: ShutdownSteps,
): Promise<RunningQueue> {
  const { env } = options;
  const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const embeddedDatabase = parts.database.kind === 'pglite';
  const useRedis = (!embeddedDatabase || options.withWorker) && (await isRedisReachable(redisUrl, 1_000));
  // Where Slack and Discord messages wait while Postgres is away: Redis, and a local file when
  // Redis cannot take them either (or there is no Redis).
  const localSpool = new FileInboundSpool(join(env.EBB_DATA_DIR, 'spool.jsonl'));
  if (useRedis) return redisQueue(options, parts, { redisUrl, localSpool }, steps);
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
    wrapSummarizer: (s) => meteredSummarizer(s, metrics.onLlmCalls),
    ...llmRetry(options),
  });
  steps.add(() => pipeline.close());
  return { queue: pipeline.queue, notifier: pipeline.notifier, spool: localSpool, embedded: true };
}

async function redisQueue(
  options: StartOptions,
  parts: QueueParts,
  { redisUrl, localSpool }: { readonly redisUrl: string; readonly localSpool: FileInboundSpool },
  steps: ShutdownSteps,
): Promise<RunningQueue> {
  const { env, logger } = options;
  const { metrics, checks } = parts.observability;
  const prefix = env.EBB_REDIS_PREFIX;
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
  return { queue: bullmq, notifier, spool, claims, board: bullmq.bullmq, embedded: false };
}
