/** The database every command opens: Postgres when DATABASE_URL is set, embedded PGlite under EBB_DATA_DIR otherwise. */
import type { EbbEnv } from '@ebb/config';
import { createDb, type Database } from '@ebb/db';

export function openDatabase(env: Pick<EbbEnv, 'DATABASE_URL' | 'EBB_DATA_DIR'>): Promise<Database> {
  return env.DATABASE_URL === undefined
    ? createDb({ dataDir: `${env.EBB_DATA_DIR}/pglite` })
    : createDb({ databaseUrl: env.DATABASE_URL });
}
