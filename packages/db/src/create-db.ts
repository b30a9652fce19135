/**
 * The database: Postgres through a `pg` pool when a URL is given, otherwise embedded PGlite in a
 * data directory, so a fresh machine runs without a server. Both speak the same SQL, read the same
 * schema and apply the same migrations (`/migrations`, written by drizzle-kit).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { type ArchiveSearch, type Logger, SILENT_LOGGER } from '@ebb/core';
import { PGlite } from '@electric-sql/pglite';
import { getTableName, is, sql } from 'drizzle-orm';
import { drizzle as drizzlePg, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import { PgTable } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite, type PgliteDatabase } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { lockEmbedded } from './embedded-lock.js';
import { PgArchiveSearch } from './pg-archive-search.js';
import { dbCall, describeThrown } from './pg-errors.js';
import {
  MIGRATIONS_FOLDER,
  makePgliteTemplate,
  PGLITE_TEMPLATES_ROOT,
  pgliteTemplatePath,
  seedDataDir,
} from './pglite-template.js';
import * as tables from './schema.js';

export type Database =
  | {
      readonly kind: 'postgres';
      readonly db: NodePgDatabase & { $client: pg.Pool };
      /** The schema the tables live in, when not the connection's default. */
      readonly schema?: string;
      /** `search_history` and `read_history` over this database's archive. */
      readonly archiveSearch: ArchiveSearch;
      close(): Promise<void>;
    }
  | {
      readonly kind: 'pglite';
      readonly db: PgliteDatabase & { $client: PGlite };
      readonly schema?: string;
      readonly archiveSearch: ArchiveSearch;
      /** How the data directory came to be: already there, copied from the template, or made now. */
      readonly origin: 'existing' | 'template' | 'created';
      close(): Promise<void>;
    };

export interface CreateDbOptions {
  /** `postgres://…`; without it Ebb runs on embedded PGlite. */
  readonly databaseUrl?: string;
  /** PGlite's data directory; `memory://` keeps it in memory (tests). */
  readonly dataDir?: string;
  /**
   * The cluster a missing or empty PGlite data directory is copied from (`pglite-template.ts`);
   * default: the one `npm run pglite-template` makes for these migrations. `false`: always initdb.
   * A copy that fails is one `db.template_skipped` warning, and the cluster is created instead.
   */
  readonly pgliteTemplate?: string | false;
  /** Where a skipped template is reported (default: nowhere). */
  readonly logger?: Logger;
  /**
   * A schema for the tables and the migrations table (it must exist): put first on the search path
   * of every connection. Tests give each file a schema of its own.
   */
  readonly schema?: string;
  /** Connections in the Postgres pool. */
  readonly poolSize?: number;
  /** An idle pooled connection failed (the server restarted); the next query reconnects. */
  readonly onPoolError?: (err: Error) => void;
}

export const DEFAULT_DB_OPTIONS = {
  dataDir: './.ebb/pglite',
  poolSize: 10,
} as const satisfies Pick<Required<CreateDbOptions>, 'dataDir' | 'poolSize'>;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export async function createDb(options: CreateDbOptions = {}): Promise<Database> {
  const schema = options.schema ?? searchPathSchema(options.databaseUrl);
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`schema ${JSON.stringify(schema)} must match ${SCHEMA_NAME}`);
  }
  const withSchema = schema === undefined ? {} : { schema };

  if (options.databaseUrl !== undefined) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? DEFAULT_DB_OPTIONS.poolSize,
      ...(schema === undefined ? {} : { options: `-c search_path=${schema}` }),
    });
    const onError = options.onPoolError ?? (() => {});
    pool.on('error', onError);
    // A connection that drops while a client is checked out (between the queries of a transaction)
    // emits 'error' on that client, which the pool does not listen to: without this, it crashes.
    pool.on('connect', (client) => client.on('error', onError));
    const db = drizzlePg({ client: pool });
    db.transaction = releasingTransaction(pool) as typeof db.transaction;
    return {
      kind: 'postgres',
      db,
      ...withSchema,
      archiveSearch: new PgArchiveSearch({ db }),
      close: () => pool.end(),
    };
  }

  const given = options.dataDir ?? DEFAULT_DB_OPTIONS.dataDir;
  const inMemory = given.startsWith('memory://');
  const dataDir = inMemory ? given : resolve(given);
  let origin: 'existing' | 'template' | 'created' = 'created';
  if (!inMemory) {
    await mkdir(dirname(dataDir), { recursive: true });
    if (existsSync(join(dataDir, 'PG_VERSION'))) origin = 'existing';
    else {
      const template = options.pgliteTemplate ?? pgliteTemplatePath();
      if (template !== false && seeded(dataDir, template, options.logger ?? SILENT_LOGGER))
        origin = 'template';
      else await mkdir(dataDir, { recursive: true });
    }
  }
  // Before it is opened: a directory another live process has open is refused (`db_locked`).
  const lock = inMemory ? undefined : lockEmbedded(dataDir);
  let client: PGlite;
  try {
    client = await dbCall('open PGlite', () => PGlite.create(dataDir));
    if (schema !== undefined)
      await client.exec(`create schema if not exists ${schema}; set search_path to ${schema}`);
  } catch (err) {
    lock?.release();
    throw err;
  }
  const db = drizzlePglite({ client });
  return {
    kind: 'pglite',
    db,
    ...withSchema,
    archiveSearch: new PgArchiveSearch({ db }),
    origin,
    close: async () => {
      try {
        await client.close();
      } finally {
        lock?.release();
      }
    },
  };
}

/**
 * Seeds `dataDir` from the template; a copy that fails (no space, no permission, the template removed
 * under it) leaves nothing behind and is a warning: the start goes on and creates the cluster.
 */
function seeded(dataDir: string, template: string, logger: Logger): boolean {
  try {
    return seedDataDir(dataDir, template);
  } catch (err) {
    const reason = describeThrown(err);
    logger.warn(
      { event: 'db.template_skipped', dataDir, template, reason },
      `could not copy the embedded database template (${reason}): creating the database instead, a few seconds slower`,
    );
    return false;
  }
}

/**
 * Makes the template `createDb` copies new PGlite data directories from, with every migration
 * applied, unless it is there (`npm run pglite-template`, which `npm install` and `npm start` run).
 */
export async function makeDefaultPgliteTemplate(root = PGLITE_TEMPLATES_ROOT): Promise<{
  readonly path: string;
  readonly made: boolean;
}> {
  const path = pgliteTemplatePath(MIGRATIONS_FOLDER, root);
  const { made } = await makePgliteTemplate(path, async (dataDir) => {
    const database = await createDb({ dataDir, pgliteTemplate: false });
    try {
      await migrate(database);
      // Ebb uses the `postgres` database only, and never creates one. The template databases are two
      // thirds of the cluster's files (about 600 of 1,000), and creating files is most of what
      // seeding costs (about 1 ms a file on the disks we measured on): without them, 0.4 s, not 1 s.
      if (database.kind === 'pglite') {
        const client = database.db.$client;
        await client.exec(
          `update pg_database set datistemplate = false where datname in ('template0', 'template1')`,
        );
        // Each on its own: DROP DATABASE cannot run in the implicit transaction of several statements.
        await client.exec('drop database template0');
        await client.exec('drop database template1');
        await client.exec('checkpoint');
      }
    } finally {
      await database.close();
    }
  });
  return { path, made };
}

/**
 * The schema a `DATABASE_URL` puts first on the search path (`?options=-c search_path=ebb`), if
 * any but `public`: Ebb's tables are created there, so the migrations table must live there too.
 * Left in the shared `drizzle` schema, it would say "applied" for a schema that has no tables yet
 * (a second Ebb on another schema of the same database would never create its own).
 */
function searchPathSchema(databaseUrl: string | undefined): string | undefined {
  if (databaseUrl === undefined) return undefined;
  let options: string | null;
  try {
    options = new URL(databaseUrl).searchParams.get('options');
  } catch {
    return undefined; // not a URL (a key=value connection string): no schema of its own
  }
  const first = /(?:^|\s)(?:-c\s*|--)search_path=([^,\s]+)/.exec(options ?? '')?.[1];
  return first !== undefined && first !== 'public' && SCHEMA_NAME.test(first) ? first : undefined;
}

/** The tables of our schema, by name (unqualified: the search path finds them in the database's schema). */
const EBB_TABLES = Object.values(tables)
  .filter((value) => is(value, PgTable))
  .map((table) => getTableName(table));

/** An arbitrary constant: the advisory lock that keeps two processes from migrating at once. */
const MIGRATION_LOCK = 0x0ebb_0001;

/**
 * Applies the migrations not applied yet (drizzle's migrator for the database's driver). The
 * migrations table lives in the database's schema when it has one, in `drizzle` otherwise.
 */
export async function migrate(database: Database): Promise<void> {
  const config = {
    migrationsFolder: MIGRATIONS_FOLDER,
    ...(database.schema === undefined ? {} : { migrationsSchema: database.schema }),
  };
  switch (database.kind) {
    case 'postgres': {
      // Two processes starting at once (bot and worker) take turns; the lock goes with the connection.
      const lock = await dbCall('migrate', () => database.db.$client.connect());
      try {
        await dbCall('migrate', () => lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]));
        await dbCall('migrate', () => migratePg(database.db, config));
      } finally {
        lock.release(true);
      }
      return;
    }
    case 'pglite':
      await dbCall('migrate', () => migratePglite(database.db, config));
      // PGlite has no autovacuum to gather statistics for the planner. Our tables only: `analyze`
      // of the whole database walks every system catalog too (0.37 s of each start, against 0.04 s).
      await dbCall('migrate', () => database.db.execute(sql.raw(`analyze ${EBB_TABLES.join(', ')}`)));
      return;
  }
}

/**
 * drizzle-orm 0.45's pool transaction runs `begin` before its try/finally, so when the connection
 * is already dead (Postgres restarted, a network cut) the checked-out client is never released: the
 * pool shrinks by one per outage and `pool.end()` hangs. This runs drizzle's transaction on a client
 * we check out and always release, destroying it when the transaction failed.
 */
function releasingTransaction(pool: pg.Pool) {
  const onClient = new WeakMap<pg.PoolClient, Pick<ReturnType<typeof drizzlePg>, 'transaction'>>();
  return async <T>(
    fn: Parameters<ReturnType<typeof drizzlePg>['transaction']>[0],
    config?: Parameters<ReturnType<typeof drizzlePg>['transaction']>[1],
  ): Promise<T> => {
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      // One drizzle instance per pooled connection, made the first time it runs a transaction.
      let db = onClient.get(client);
      if (!db) {
        db = drizzlePg({ client });
        onClient.set(client, db);
      }
      return (await db.transaction(fn, config)) as T;
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.release(failure);
    }
  };
}
