/** What the long-running commands share: config and environment, the logger, the database. */
import { type EbbConfig, type EbbEnv, loadConfig, loadEnv } from '@ebb/config';
import { createLogger, type Logger } from '@ebb/logger';

export interface Runtime {
  readonly config: EbbConfig;
  readonly env: EbbEnv;
  readonly logger: Logger;
}

export async function loadRuntime(args: { config?: string | undefined }, name: string): Promise<Runtime> {
  const env = loadEnv();
  const config = await loadConfig(args.config === undefined ? {} : { path: args.config });
  const logger = createLogger({
    name,
    level: env.LOG_LEVEL,
    pretty: env.NODE_ENV !== 'production' && process.stdout.isTTY === true,
  });
  return { config, env, logger };
}

export { openDatabase } from '../open-database.js';
