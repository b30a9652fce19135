/**
 * `ebb worker`: runs compaction passes from the Redis queue against Postgres until SIGTERM or
 * SIGINT, then finishes (or hands back) the jobs in hand and exits. Run as many as you like.
 */

import { runCompactionWorker } from '@ebb/compaction-worker';
import { migrate } from '@ebb/db';
import type { CommandIo } from './io.js';
import { watchConfig } from './reload.js';
import { loadRuntime, openDatabase } from './runtime.js';

export async function worker(
  args: { config?: string; concurrency?: number },
  io: CommandIo,
): Promise<number> {
  const { config, env, logger } = await loadRuntime(args, 'ebb-worker');
  if (env.DATABASE_URL === undefined) {
    io.err(
      'ebb worker: DATABASE_URL is not set. A separate worker needs Postgres (the embedded database belongs to one process);\n' +
        'set DATABASE_URL, or run Ebb embedded, where passes run in the bot process.',
    );
    return 1;
  }
  const database = await openDatabase(env);
  await migrate(database);
  const reloading = watchConfig(config, logger);
  const running = await runCompactionWorker({
    config: reloading.current,
    env,
    database,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisPrefix: env.EBB_REDIS_PREFIX,
    logger,
    ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
  });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'stopping the compaction worker');
      resolve();
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  reloading.stop();
  await running.close();
  await database.close();
  return 0;
}
