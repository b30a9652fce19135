/**
 * The database every command opens: Postgres when DATABASE_URL is set, embedded PGlite under
 * EBB_DATA_DIR otherwise (a new data directory copied from the template in EBB_PGLITE_TEMPLATES, or
 * the one `npm install` made). `logger` hears of a template that could not be copied.
 */
import type { EbbEnv } from '@ebb/config';
import type { Logger } from '@ebb/core';
import { createDb, type Database, pgliteTemplatePath } from '@ebb/db';

export function openDatabase(
  env: Pick<EbbEnv, 'DATABASE_URL' | 'EBB_DATA_DIR' | 'EBB_PGLITE_TEMPLATES'>,
  logger?: Logger,
): Promise<Database> {
  if (env.DATABASE_URL !== undefined) return createDb({ databaseUrl: env.DATABASE_URL });
  return createDb({
    dataDir: `${env.EBB_DATA_DIR}/pglite`,
    ...(env.EBB_PGLITE_TEMPLATES === undefined
      ? {}
      : { pgliteTemplate: pgliteTemplatePath(undefined, env.EBB_PGLITE_TEMPLATES) }),
    ...(logger === undefined ? {} : { logger }),
  });
}
