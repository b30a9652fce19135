/** `ebb migrate`: applies the migrations in migrations/ to DATABASE_URL (or the embedded PGlite). */
import { loadEnv } from '@ebb/config';
import { migrate as applyMigrations } from '@ebb/db';
import type { CommandIo } from './io.js';
import { openDatabase } from './runtime.js';

export async function migrate(io: CommandIo): Promise<number> {
  const env = loadEnv();
  const database = await openDatabase(env);
  try {
    await applyMigrations(database);
    io.out(
      database.kind === 'postgres'
        ? 'migrations applied to DATABASE_URL'
        : `migrations applied to the embedded database in ${env.EBB_DATA_DIR}/pglite`,
    );
    return 0;
  } finally {
    await database.close();
  }
}
