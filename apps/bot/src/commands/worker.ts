/**
 * `ebb worker`: runs compaction passes from the Redis queue against Postgres until SIGTERM or
 * SIGINT, then finishes (or hands back) the jobs in hand and exits. Run as many as you like.
 */

import { runCompactionWorker } from '@ebb/compaction';
import { migrate } from '@ebb/db';
import {
  createMetrics,
  DEFAULT_SERVE_OPTIONS,
  healthCheck,
  type ObservabilityServer,
  postgresCheck,
  redisCheck,
  serveObservabilityOnDefaultPort,
} from '@ebb/observability';
import { closeRedis, createRedis } from '@ebb/queue';
import { exposure, mountGuards } from '@ebb/web';
import { describeStartFailure, StartRefusedError } from '../start-failure.js';
import type { CommandIo } from './io.js';
import { watchConfig } from './reload.js';
import { loadRuntime, openDatabase } from './runtime.js';
import { untilStopSignal } from './stop-signals.js';

export async function worker(
  args: { config?: string; concurrency?: number },
  io: CommandIo,
): Promise<number> {
  const runtime = await loadRuntime(args, { command: 'ebb worker', logger: 'ebb-worker' }, io);
  if (typeof runtime === 'number') return runtime;
  const { config, env, logger } = runtime;
  if (env.DATABASE_URL === undefined) {
    io.err(
      'ebb worker: DATABASE_URL is not set. A separate worker needs Postgres (the embedded database belongs to one process);\n' +
        'set DATABASE_URL, or run Ebb embedded, where passes run in the bot process.',
    );
    return 1;
  }
  // The bot's rule for a listener beyond loopback (no credential, no start); here the credential is
  // the metrics token.
  const host = env.EBB_METRICS_HOST;
  const port = env.EBB_METRICS_PORT ?? DEFAULT_SERVE_OPTIONS.port;
  if (exposure({ host, port, adminToken: env.EBB_METRICS_TOKEN, publicApi: false }).kind === 'refused') {
    const refused = new StartRefusedError(
      `EBB_METRICS_HOST = "${host}" listens beyond this machine, but EBB_METRICS_TOKEN is not set`,
      'set EBB_METRICS_TOKEN (at least 16 characters, e.g. `openssl rand -hex 24`) and give it to Prometheus as its bearer token; or unset EBB_METRICS_HOST to listen on 127.0.0.1',
    );
    logger.fatal(
      { event: 'worker.start_failed', ...describeStartFailure(refused) },
      'Ebb worker could not start',
    );
    return 1;
  }
  // Listening from here on: a signal while the worker starts stops it once it has, rather than
  // meeting Node's default action, which kills at once.
  const stopSignal = untilStopSignal(logger);
  let database: Awaited<ReturnType<typeof openDatabase>>;
  try {
    database = await openDatabase(env);
    await migrate(database);
  } catch (err) {
    // One line an operator can act on, like `ebb start`'s (see start-failure.ts).
    logger.fatal(
      { event: 'worker.start_failed', ...describeStartFailure(err) },
      'Ebb worker could not start',
    );
    return 1;
  }
  // Read at each call, so a reloaded [prices] applies (reloading starts below).
  const metrics = createMetrics({ prices: () => reloading.current().prices });
  const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const healthRedis = createRedis(redisUrl, { role: 'producer', logger });
  const routes = {
    metrics,
    health: () =>
      healthCheck({ checks: { database: postgresCheck(database.db), redis: redisCheck(healthRedis) } }),
  };
  let observability: ObservabilityServer;
  try {
    const served = await serveObservabilityOnDefaultPort({
      ...routes,
      host,
      port: env.EBB_METRICS_PORT,
      // The bot's access rule: /metrics wants EBB_METRICS_TOKEN once it is set, /healthz is open.
      guard: (app) => mountGuards(app, { access: { metricsToken: env.EBB_METRICS_TOKEN } }),
    });
    observability = served.server;
    if (served.fellBack) {
      logger.warn(
        { event: 'worker.metrics_port_taken', url: observability.url },
        `port ${DEFAULT_SERVE_OPTIONS.port} is taken (another ebb worker on this host?): metrics at ${observability.url}/metrics; set EBB_METRICS_PORT to choose`,
      );
    }
  } catch (err) {
    logger.fatal(
      { event: 'worker.start_failed', ...describeStartFailure(err) },
      'Ebb worker could not start',
    );
    healthRedis.disconnect();
    await database.close();
    return 1;
  }
  logger.info(
    { event: 'worker.metrics_started', url: observability.url },
    `worker metrics at ${observability.url}/metrics`,
  );
  const reloading = watchConfig(config, logger);
  const running = await runCompactionWorker({
    config: reloading.current,
    env,
    database,
    redisUrl,
    metrics,
    redisPrefix: env.EBB_REDIS_PREFIX,
    logger,
    ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
  });
  const signal = await stopSignal;
  logger.info({ event: 'worker.stopping', signal }, 'stopping the compaction worker');
  reloading.stop();
  await running.close();
  await observability.close();
  await closeRedis(healthRedis);
  await database.close();
  return 0;
}
