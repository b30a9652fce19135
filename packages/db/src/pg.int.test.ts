import { EbbError, REDACTED_SUMMARY } from '@ebb/core';
import { emptySchema, type FreshSchemaDb, freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStoreContract } from '../test/contract/index.js';
import { createDb, migrate } from './create-db.js';
import { PgChannelStore } from './pg-channel-store.js';
import { PgMemoryStore } from './pg-memory-store.js';
import { PgRunStore } from './pg-run-store.js';
import { PgTakeBackLog } from './pg-take-back-log.js';
import { rowsOf } from './rows.js';

let pg: FreshSchemaDb;

beforeAll(async () => {
  pg = await freshSchemaDb({ poolSize: 8 });
});
afterAll(async () => {
  await pg?.close();
});

describeStoreContract('postgres', async () => ({
  channels: new PgChannelStore({ db: pg.db }),
  memories: new PgMemoryStore({ db: pg.db }),
  runs: new PgRunStore({ db: pg.db }),
  takeBacks: new PgTakeBackLog({ db: pg.db }),
  close: async () => {},
}));

describe('postgres: migrations', () => {
  it('create every table and index in an empty schema, and apply once', async () => {
    const fresh = await freshSchemaDb();
    try {
      const tables = rowsOf<{ table_name: string }>(
        await fresh.db.execute(
          sql`select table_name from information_schema.tables where table_schema = ${fresh.schema} order by 1`,
        ),
      ).map((r) => r.table_name);
      expect(tables).toEqual([
        '__drizzle_migrations',
        'budget_notices',
        'channels',
        'compaction_runs',
        'context_spans',
        'llm_usage',
        'memories',
        'messages',
        'take_backs',
      ]);
      const indexes = rowsOf<{ indexname: string; indexdef: string }>(
        await fresh.db.execute(
          sql`select indexname, indexdef from pg_indexes where schemaname = ${fresh.schema}`,
        ),
      );
      const def = (name: string) => indexes.find((i) => i.indexname === name)?.indexdef ?? '';
      expect(def('context_spans_active_idx')).toMatch(/UNIQUE INDEX .* WHERE active/);
      expect(def('memories_search_idx')).toMatch(/USING gin \(search\)/);
      expect(def('compaction_runs_unfinished_idx')).toMatch(/WHERE .*status.*queued.*running/);
      expect(def('take_backs_pending_idx')).toMatch(/WHERE .*status.*pending/);
      // A second run finds nothing to do.
      await migrate(fresh.database);
      const applied = rowsOf<{ n: number }>(
        await fresh.db.execute(
          sql`select count(*)::int as n from ${sql.identifier(fresh.schema)}.__drizzle_migrations`,
        ),
      );
      expect(applied[0]?.n).toBeGreaterThanOrEqual(1);
    } finally {
      await fresh.close();
    }
  });
});

describe('postgres: forgetting', () => {
  it('redacts the text of retired summary spans over the seqs, and only theirs', async () => {
    const channels = new PgChannelStore({ db: pg.db });
    const key = 'web:retired-redaction';
    for (let i = 1; i <= 12; i++) {
      await channels.append(key, { role: 'user', author: 'u', text: `m${i}`, tokens: 1, contextTokens: 1 });
    }
    await channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1 holds 7431', tokens: 3 });
    await channels.splice(key, { jobId: 'j2', fromSeq: 5, toSeq: 8, text: 'S2 other', tokens: 3 });
    await channels.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 10, text: 'S3 holds 7431', tokens: 3 });
    expect(await channels.redactRetiredSpans(key, [{ fromSeq: 3, toSeq: 3 }])).toBe(1);
    const spans = rowsOf<{ job_id: string; active: boolean; text: string }>(
      await pg.db.execute(
        sql`select job_id, active, text from context_spans where channel_key = ${key} order by job_id`,
      ),
    );
    expect(spans).toEqual([
      { job_id: 'j1', active: false, text: REDACTED_SUMMARY },
      { job_id: 'j2', active: false, text: 'S2 other' },
      { job_id: 'j3', active: true, text: 'S3 holds 7431' },
    ]);
    expect(await channels.redactRetiredSpans(key, [{ fromSeq: 3, toSeq: 3 }])).toBe(0);
  });
});

describe('postgres: errors', () => {
  it('maps a refused connection to a retryable db_unavailable', async () => {
    const database = await createDb({ databaseUrl: 'postgres://postgres@127.0.0.1:1/test' });
    try {
      const error = await new PgChannelStore({ db: database.db })
        .generation('web:x')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EbbError);
      expect(error).toMatchObject({ code: 'db_unavailable', retryable: true });
    } finally {
      await database.close();
    }
  });

  it('maps a missing table to db_schema, naming the operation', async () => {
    const database = await createDb({ databaseUrl: testDatabaseUrl(), schema: 'ebb_no_such_schema' });
    try {
      const error = await new PgRunStore({ db: database.db }).get('j').catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'db_schema', retryable: false });
      expect((error as Error).message).toMatch(/^getRun failed: .*compaction_runs/);
    } finally {
      await database.close();
    }
  });
});

describe('postgres: a DATABASE_URL that names a schema on its search path', () => {
  it('creates the tables and keeps the migrations table in that schema, for each of two schemas', async () => {
    for (let i = 0; i < 2; i++) {
      const empty = await emptySchema();
      const database = await createDb({ databaseUrl: empty.url });
      try {
        await migrate(database);
        const tables = rowsOf<{ table_name: string }>(
          await database.db.execute(
            sql`select table_name from information_schema.tables where table_schema = current_schema() order by 1`,
          ),
        ).map((r) => r.table_name);
        expect(tables).toContain('__drizzle_migrations');
        expect(tables).toContain('compaction_runs');
      } finally {
        await database.close();
        await empty.drop();
      }
    }
  });
});
