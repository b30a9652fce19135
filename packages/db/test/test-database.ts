/**
 * Real Postgres for integration tests: each test file gets a schema of its own, with the migrations
 * applied, and drops it when done, so files run in parallel against one database without seeing
 * each other's rows.
 *
 *   let pg: FreshSchemaDb;
 *   beforeAll(async () => { pg = await freshSchemaDb(); });
 *   afterAll(() => pg.close());
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, type Database, type EbbDatabase, migrate } from '../src/index.js';

/** `TEST_DATABASE_URL`, or the local server every machine of the project runs. */
export function testDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
}

export interface FreshSchemaDb {
  readonly db: EbbDatabase;
  readonly database: Database;
  /** The schema's name (`ebb_test_…`). */
  readonly schema: string;
  /** A `DATABASE_URL` whose connections look only there (for an `ebb` process a test starts). */
  readonly url: string;
  /** Closes the pool and drops the schema with everything in it. */
  close(): Promise<void>;
}

export interface FreshSchemaOptions {
  readonly databaseUrl?: string;
  /** Connections in the pool (tests of concurrency want a few). */
  readonly poolSize?: number;
}

export async function freshSchemaDb(options: FreshSchemaOptions = {}): Promise<FreshSchemaDb> {
  const databaseUrl = options.databaseUrl ?? testDatabaseUrl();
  const schema = `ebb_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin(databaseUrl, `create schema ${schema}`);
  const database = await createDb({
    databaseUrl,
    schema,
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
  });
  try {
    await migrate(database);
  } catch (err) {
    await database.close();
    await admin(databaseUrl, `drop schema ${schema} cascade`);
    throw err;
  }
  return {
    db: database.db,
    database,
    schema,
    url: schemaUrl(databaseUrl, schema),
    async close() {
      await database.close();
      await admin(databaseUrl, `drop schema if exists ${schema} cascade`);
    },
  };
}

/**
 * A schema with nothing in it and a `DATABASE_URL` whose connections look only there: a database
 * Ebb has not migrated yet. `drop` removes it.
 */
export async function emptySchema(
  databaseUrl = testDatabaseUrl(),
): Promise<{ readonly url: string; drop(): Promise<void> }> {
  const schema = `ebb_empty_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin(databaseUrl, `create schema ${schema}`);
  return {
    url: schemaUrl(databaseUrl, schema),
    drop: () => admin(databaseUrl, `drop schema if exists ${schema} cascade`),
  };
}

/** `databaseUrl` with a search path of `schema` alone. */
function schemaUrl(databaseUrl: string, schema: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** One statement on a connection of its own (the pool's connections are bound to the schema). */
async function admin(databaseUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
