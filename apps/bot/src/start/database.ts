/**
 * The database part: the one the options give (tests), else Postgres at DATABASE_URL or the embedded
 * PGlite (announced), migrated and closed at stop; and the one set of stores the bot and the
 * dashboard share.
 */

import { DEFAULT_RETRYING_USAGE, type Logger, RetryingUsageStore, type ShutdownSteps } from '@ebb/core';
import {
  type Database,
  migrate,
  PgBudgetNotices,
  PgChannelStore,
  PgMemoryStore,
  PgRunStore,
  PgUsageStore,
} from '@ebb/db';
import { openDatabase } from './open-database.js';
import type { StartOptions } from './options.js';

export async function startDatabase(options: StartOptions, steps: ShutdownSteps): Promise<Database> {
  const { env, logger } = options;
  let database = options.database;
  if (!database) {
    database = await openDatabase(env, logger);
    const opened = database;
    steps.add(() => opened.close());
    await migrate(database);
  }
  if (database.kind === 'pglite') {
    const made = { existing: '', template: ' (new, copied from the install template)', created: ' (new)' };
    logger.info(
      { event: 'ebb.fallback', part: 'database', dataDir: env.EBB_DATA_DIR, origin: database.origin },
      `no DATABASE_URL: using the embedded database (PGlite) in ${env.EBB_DATA_DIR}${made[database.origin]}`,
    );
  }
  return database;
}

export type Stores = ReturnType<typeof pgStores>;

/**
 * One set of stores for the bot and the dashboard. Usage the database cannot take (an outage) is
 * kept and written once it can, and its last try made at stop, after the bot's turns.
 */
export function pgStores(database: Database, logger: Logger, steps: ShutdownSteps) {
  const usage = new RetryingUsageStore({ store: new PgUsageStore({ db: database.db }), log: logger });
  steps.add(() => usage.close(), DEFAULT_RETRYING_USAGE.closeMs + 1_000);
  return {
    channels: new PgChannelStore({ db: database.db }),
    memories: new PgMemoryStore({ db: database.db }),
    runs: new PgRunStore({ db: database.db }),
    usage,
    budgetNotices: new PgBudgetNotices({ db: database.db }),
  };
}
