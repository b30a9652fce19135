/**
 * `ebb worker`: runs compaction passes from the Redis queue against Postgres until SIGTERM or
 * SIGINT, then finishes (or hands back) the jobs in hand and exits. Run as many as you like. The
 * process is assembled in workers/compaction (`startWorkerProcess`); this command is its shell, the
 * one `ebb start` has too: config and environment, the settings it refuses, reloads and signals.
 */

import { startWorkerProcess, type WorkerProcess } from '@ebb/compaction-worker';
import { DEFAULT_SERVE_OPTIONS } from '@ebb/observability';
import { exposure } from '@ebb/web';
import { describeStartFailure, StartRefusedError } from '../start/start-failure.js';
import type { CommandIo } from './io.js';
import { watchConfig } from './reload.js';
import { loadRuntime } from './runtime.js';
import { exitIfLingering, untilStopSignal } from './stop-signals.js';

export async function worker(
  args: { config?: string; concurrency?: number },
  io: CommandIo,
): Promise<number> {
  const runtime = await loadRuntime(args, { command: 'ebb worker', logger: 'ebb-worker' }, io);
  if (typeof runtime === 'number') return runtime;
  const { config, env, logger } = runtime;
  const { DATABASE_URL } = env;
  if (DATABASE_URL === undefined) {
    io.err(
      'ebb worker: DATABASE_URL is not set. A separate worker needs Postgres (the embedded database belongs to one process);\n' +
        'set DATABASE_URL, or run Ebb embedded, where passes run in the bot process.',
    );
    return 1;
  }
  const startFailed = (err: unknown) =>
    logger.fatal(
      { event: 'worker.start_failed', ...describeStartFailure(err) },
      'Ebb worker could not start',
    );
  // The bot's rule for a listener beyond loopback (no credential, no start); here the credential is
  // the metrics token.
  const host = env.EBB_METRICS_HOST;
  const port = env.EBB_METRICS_PORT ?? DEFAULT_SERVE_OPTIONS.port;
  if (exposure({ host, port, adminToken: env.EBB_METRICS_TOKEN, publicApi: false }).kind === 'refused') {
    startFailed(
      new StartRefusedError(
        `EBB_METRICS_HOST = "${host}" listens beyond this machine, but EBB_METRICS_TOKEN is not set`,
        'set EBB_METRICS_TOKEN (at least 16 characters, e.g. `openssl rand -hex 24`) and give it to Prometheus as its bearer token; or unset EBB_METRICS_HOST to listen on 127.0.0.1',
      ),
    );
    return 1;
  }
  // Listening from here on: a signal while the worker starts stops it once it has, rather than
  // meeting Node's default action, which kills at once.
  const stopSignal = untilStopSignal(logger);
  const reloading = watchConfig(config, logger);
  let running: WorkerProcess;
  try {
    running = await startWorkerProcess({
      config: reloading.current,
      env: { ...env, DATABASE_URL },
      logger,
      ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
    });
  } catch (err) {
    // One line an operator can act on, like `ebb start`'s (see start-failure.ts).
    startFailed(err);
    reloading.stop();
    exitIfLingering(logger, 1);
    return 1;
  }
  const signal = await stopSignal;
  logger.info({ event: 'worker.stopping', signal }, 'stopping the compaction worker');
  const started = performance.now();
  reloading.stop();
  await running.stop();
  logger.info(
    { event: 'worker.stopped', ms: Math.round(performance.now() - started) },
    'compaction worker stopped',
  );
  exitIfLingering(logger, 0);
  return 0;
}
