/** What the long-running commands share: config and environment, the logger, the database. */
import { ConfigError, type EbbConfig, type EbbEnv, loadConfig, loadEnv } from '@ebb/config';
import { createLogger, type Logger } from '@ebb/logger';
import type { CommandIo } from './io.js';

export interface Runtime {
  readonly config: EbbConfig;
  readonly env: EbbEnv;
  readonly logger: Logger;
}

/**
 * The environment, the config and a logger named `name`. A bad environment or config is reported as
 * the operator commands report it (every problem with its file, key and rule, then what to do) and
 * becomes exit code 1, the number returned: never a stack trace, and nothing is started.
 */
export async function loadRuntime(
  args: { config?: string | undefined },
  names: { readonly command: string; readonly logger: string },
  io: CommandIo,
): Promise<Runtime | number> {
  let env: EbbEnv;
  let config: EbbConfig;
  try {
    env = loadEnv();
    config = await loadConfig(args.config === undefined ? {} : { path: args.config });
  } catch (err) {
    return reportConfigError(names.command, err, io);
  }
  const logger = createLogger({
    name: names.logger,
    level: env.LOG_LEVEL,
    pretty: env.NODE_ENV !== 'production' && process.stdout.isTTY === true,
  });
  return { config, env, logger };
}

export { openDatabase } from '../start/open-database.js';

/** A `ConfigError` as sentences on `err` and exit code 1; anything else is a bug and rethrown. */
export function reportConfigError(command: string, err: unknown, io: CommandIo): number {
  if (!(err instanceof ConfigError)) throw err;
  for (const line of err.message.split('\n')) io.err(line);
  io.err(`${command}: fix the problem${err.issues.length === 1 ? '' : 's'} above and run it again`);
  return 1;
}
