/**
 * The compaction worker process, assembled: what `ebb worker` runs. Postgres (migrated), the
 * `/metrics` and `/healthz` server, a Redis connection for the health check, and the BullMQ worker
 * running `@ebb/compaction`'s processor and reconciler; `stop()` closes them in reverse order, each
 * in a bounded time (a Redis or Postgres that is gone, or behind a partition, cannot keep it from
 * exiting), as `ebb start` closes its parts. The
 * CLI around it (apps/bot's `ebb worker`) loads the config and environment, refuses unsafe settings,
 * watches config.toml and waits for SIGTERM or SIGINT, as it does for `ebb start`.
 */
import { CLOSE_BEYOND_PASSES_MS, runCompactionWorker } from '@ebb/compaction';
import { DEFAULT_REDIS_URL, type EbbConfig, type EbbEnv } from '@ebb/config';
import { ShutdownSteps } from '@ebb/core';
import { createDb, migrate } from '@ebb/db';
import type { Logger } from '@ebb/logger';
import {
  createMetrics,
  DEFAULT_SERVE_OPTIONS,
  healthCheck,
  postgresCheck,
  redisCheck,
  serveObservabilityOnDefaultPort,
  startTracing,
  TRACING_STOP_STEP_MS,
  type TracingEnvName,
} from '@ebb/observability';
import { closeRedis, createRedis, DEFAULT_COMPACTION_WORKER_OPTIONS } from '@ebb/queue';
import { mountGuards } from '@ebb/web';

export type WorkerProcessEnv = Pick<
  EbbEnv,
  | 'OPENAI_API_KEY'
  | 'REDIS_URL'
  | 'EBB_REDIS_PREFIX'
  | 'EBB_METRICS_HOST'
  | 'EBB_METRICS_PORT'
  | 'EBB_METRICS_TOKEN'
  | TracingEnvName
> & {
  /** A separate worker needs Postgres: the embedded database belongs to one process. */
  readonly DATABASE_URL: string;
};

export interface WorkerProcessOptions {
  /** Read for every pass and by the cost metrics, so a reloaded config (and its [prices]) applies. */
  readonly config: () => EbbConfig;
  readonly env: WorkerProcessEnv;
  readonly logger: Logger;
  readonly concurrency?: number;
}

export interface WorkerProcess {
  /** Finishes the jobs in hand (or hands them back), then closes the metrics server, Redis and the database. */
  stop(): Promise<void>;
}

/** Starts the worker; on a failure at any step it closes what it had opened and throws the error. */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const { env, logger } = options;
  // What is open so far, closed last-opened first: by stop(), or by a step of the start that fails.
  const opened = new ShutdownSteps(logger);
  try {
    // First opened, last closed: the spans of the whole stop are flushed.
    const tracing = await startTracing(env, logger, { serviceName: 'ebb-worker' });
    opened.add(() => tracing.shutdown(), TRACING_STOP_STEP_MS);
    const database = await createDb({ databaseUrl: env.DATABASE_URL });
    opened.add(() => database.close());
    await migrate(database);
    const metrics = createMetrics({ prices: () => options.config().prices });
    const redisUrl = env.REDIS_URL ?? DEFAULT_REDIS_URL;
    const healthRedis = createRedis(redisUrl, { role: 'producer', logger });
    opened.add(() => closeRedis(healthRedis));
    const served = await serveObservabilityOnDefaultPort({
      metrics,
      health: () =>
        healthCheck({ checks: { database: postgresCheck(database.db), redis: redisCheck(healthRedis) } }),
      host: env.EBB_METRICS_HOST,
      port: env.EBB_METRICS_PORT,
      // The bot's access rule: /metrics wants EBB_METRICS_TOKEN once it is set, /healthz is open.
      guard: (app) => mountGuards(app, { access: { metricsToken: env.EBB_METRICS_TOKEN } }),
    });
    const observability = served.server;
    opened.add(() => observability.close());
    if (served.fellBack) {
      logger.warn(
        { event: 'worker.metrics_port_taken', url: observability.url },
        `port ${DEFAULT_SERVE_OPTIONS.port} is taken (another ebb worker on this host?): metrics at ${observability.url}/metrics; set EBB_METRICS_PORT to choose`,
      );
    }
    logger.info(
      { event: 'worker.metrics_started', url: observability.url },
      `worker metrics at ${observability.url}/metrics`,
    );
    const running = await runCompactionWorker({
      config: options.config,
      env,
      database,
      redisUrl,
      metrics,
      redisPrefix: env.EBB_REDIS_PREFIX,
      logger,
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    });
    // The passes in hand get the worker's close timeout, then the rest of its close its own bound.
    opened.add(
      () => running.close(),
      DEFAULT_COMPACTION_WORKER_OPTIONS.closeTimeoutMs + CLOSE_BEYOND_PASSES_MS,
    );
  } catch (err) {
    await opened.close();
    throw err;
  }
  return { stop: () => opened.close() };
}
