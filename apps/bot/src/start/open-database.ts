/**
 * The database every command opens: Postgres when DATABASE_URL is set, embedded PGlite under
 * EBB_DATA_DIR otherwise (a new data directory is copied from the template `npm install` made).
 * `logger` hears of a template that could not be copied.
 */
import type { EbbEnv } from '@ebb/config';
import type { Logger } from '@ebb/core';
import { createDb, type Database } from '@ebb/db';

export function openDatabase(
  env: Pick<EbbEnv, 'DATABASE_URL' | 'EBB_DATA_DIR'>,
  logger?: Logger,
): Promise<Database> {
  if (env.DATABASE_URL !== undefined) return createDb({ databaseUrl: env.DATABASE_URL });
  return createDb({ dataDir: `${env.EBB_DATA_DIR}/pglite`, ...(logger === undefined ? {} : { logger }) });
}
