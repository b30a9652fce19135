/**
 * `ebb dev` (bot and compaction worker in one process; what `npm start` runs) and `ebb start` (the
 * bot alone, with workers started separately by `ebb worker`). Both run until SIGTERM or SIGINT.
 */
import { startEbb } from '../start-ebb.js';
import type { CommandIo } from './io.js';
import { watchConfig } from './reload.js';
import { loadRuntime } from './runtime.js';

export async function run(args: { config?: string; withWorker: boolean }, _io: CommandIo): Promise<number> {
  const { config, env, logger } = await loadRuntime(args, args.withWorker ? 'ebb-dev' : 'ebb');
  const reloading = watchConfig(config, logger);
  const ebb = await startEbb({ config: reloading.current, env, logger, withWorker: args.withWorker });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping Ebb');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  reloading.stop();
  await ebb.close();
  return 0;
}
