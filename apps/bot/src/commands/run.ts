/**
 * `ebb dev` (bot and compaction worker in one process; what `npm start` runs) and `ebb start` (the
 * bot alone, with workers started separately by `ebb worker`). Both run until SIGTERM or SIGINT.
 */
import type { Logger } from '@ebb/logger';
import { describeStartFailure } from '../start/start-failure.js';
import { type RunningEbb, startEbb } from '../start-ebb.js';
import type { CommandIo } from './io.js';
import { watchConfig } from './reload.js';
import { loadRuntime } from './runtime.js';
import { exitIfLingering, untilStopSignal } from './stop-signals.js';

export async function run(args: { config?: string; withWorker: boolean }, io: CommandIo): Promise<number> {
  const runtime = await loadRuntime(
    args,
    args.withWorker ? { command: 'ebb dev', logger: 'ebb-dev' } : { command: 'ebb start', logger: 'ebb' },
    io,
  );
  if (typeof runtime === 'number') return runtime;
  const { config, env, logger } = runtime;
  const reloading = watchConfig(config, logger);
  let ebb: RunningEbb;
  try {
    ebb = await startEbb({ config: reloading.current, env, logger, withWorker: args.withWorker });
  } catch (err) {
    reloading.stop();
    logger.fatal({ event: 'ebb.start_failed', ...describeStartFailure(err) }, 'Ebb could not start');
    // What the failed start had opened is closed; a connection a library keeps open must not hold it.
    exitIfLingering(logger, 1);
    return 1;
  }
  await untilSignalled(logger, () => reloading.current().shutdown.grace_seconds);
  reloading.stop();
  await stopGracefully(ebb, logger);
  exitIfLingering(logger, 0);
  return 0;
}

/** Resolves on the first SIGTERM or SIGINT, logged; later ones as `untilStopSignal` says. */
export async function untilSignalled(logger: Logger, graceSeconds: () => number): Promise<void> {
  const signal = await untilStopSignal(logger);
  logger.info(
    { event: 'ebb.stopping', signal, graceSeconds: graceSeconds() },
    'stopping Ebb: finishing the turns in hand',
  );
}

/** Closes Ebb in order (intake, turns in hand, worker, queue, stores) and logs how long it took. */
export async function stopGracefully(ebb: RunningEbb, logger: Logger): Promise<void> {
  const started = performance.now();
  await ebb.close();
  logger.info({ event: 'ebb.stopped', ms: Math.round(performance.now() - started) }, 'Ebb stopped');
}
