import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeStoreContract } from '../test/contract/index.js';
import { createDb, type Database, migrate } from './create-db.js';
import { PgChannelStore } from './pg-channel-store.js';
import { PgMemoryStore } from './pg-memory-store.js';
import { PgRunStore } from './pg-run-store.js';
import { PgTakeBackLog } from './pg-take-back-log.js';
import { rowsOf } from './rows.js';

// PGlite takes seconds to start: one in-memory instance for the whole file.
let database: Database;

beforeAll(async () => {
  database = await createDb({ dataDir: 'memory://' });
  await migrate(database);
}, 120_000);
afterAll(async () => {
  await database?.close();
});

describeStoreContract('pglite', async () => ({
  channels: new PgChannelStore({ db: database.db }),
  memories: new PgMemoryStore({ db: database.db }),
  runs: new PgRunStore({ db: database.db }),
  takeBacks: new PgTakeBackLog({ db: database.db }),
  close: async () => {},
}));

describe('pglite: migrations', () => {
  it('apply once, with the partial and GIN indexes', async () => {
    await migrate(database);
    const indexes = rowsOf<{ indexname: string; indexdef: string }>(
      await database.db.execute(sql`select indexname, indexdef from pg_indexes where schemaname = 'public'`),
    );
    const def = (name: string) => indexes.find((i) => i.indexname === name)?.indexdef ?? '';
    expect(def('context_spans_active_idx')).toMatch(/UNIQUE INDEX .* WHERE active/);
    expect(def('memories_search_idx')).toMatch(/USING gin \(search\)/);
  });
});
