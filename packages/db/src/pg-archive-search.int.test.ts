import { ARCHIVE_SEARCH } from '@ebb/core';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeArchiveSearchContract } from '../test/contract/archive-search.js';
import { createDb, type Database, migrate } from './create-db.js';
import { PgChannelStore } from './pg-channel-store.js';

let pg: FreshSchemaDb;
// PGlite takes seconds to start: one in-memory instance for the whole file.
let pglite: Database;

beforeAll(async () => {
  [pg, pglite] = await Promise.all([freshSchemaDb(), createDb({ dataDir: 'memory://' })]);
  await migrate(pglite);
}, 120_000);
afterAll(async () => {
  await Promise.all([pg?.close(), pglite?.close()]);
});

describeArchiveSearchContract('postgres', async () => ({
  channels: new PgChannelStore({ db: pg.db }),
  archive: pg.database.archiveSearch,
  close: async () => {},
}));

describeArchiveSearchContract('pglite', async () => ({
  channels: new PgChannelStore({ db: pglite.db }),
  archive: pglite.archiveSearch,
  close: async () => {},
}));

describe('postgres: search windows', () => {
  const key = 'web:windows';
  beforeAll(async () => {
    // 50,000 messages (index windows 46,001–50,000, 6,001–46,000, 1–6,000), loaded in one statement.
    await pg.db.execute(sql`
      insert into messages (channel_key, seq, role, author, content, tokens, context_tokens)
      select ${key}, g, 'user', 'u' || (g % 7),
        'common filler ' || case when g in (3, 20000, 49000) then 'needle' else 'hay' end
          || case when g % 50 = 0 then ' sparse' else '' end
          || case when (g > 46000 and g % 40 = 0) or g = 10 then ' burst' else '' end, 3, 3
      from generate_series(1, 50000) g`);
    await pg.db.execute(sql`analyze messages`);
  });

  it('finds a rare word in every window, oldest included', async () => {
    const found = await pg.database.archiveSearch.search(key, { text: 'needle', limit: 10 });
    expect(found.map((m) => m.seq).sort((a, b) => a - b)).toEqual([3, 20000, 49000]);
  });

  it('walks on for a word the newest messages say is near, and finds the newest matches', async () => {
    // 80 matches in the newest 4,000; the other 120 within the next 6,000.
    const found = await pg.database.archiveSearch.search(key, { text: 'sparse', limit: 500 });
    expect(found.map((m) => m.seq).sort((a, b) => b - a)).toEqual(
      Array.from({ length: ARCHIVE_SEARCH.candidates }, (_, i) => 50000 - 50 * i),
    );
  });

  it('goes to the index when a walk comes up short', async () => {
    // 100 matches in the newest 4,000 promise more nearby, but the next is at seq 10.
    const found = await pg.database.archiveSearch.search(key, { text: 'burst', limit: 500 });
    expect(found).toHaveLength(101);
    expect(Math.min(...found.map((m) => m.seq))).toBe(10);
  });

  it('ranks the newest matches of a common word, within the asked range', async () => {
    const all = await pg.database.archiveSearch.search(key, { text: 'common', limit: 500 });
    expect(all).toHaveLength(ARCHIVE_SEARCH.candidates);
    expect(Math.min(...all.map((m) => m.seq))).toBe(50000 - ARCHIVE_SEARCH.candidates + 1);
    const early = await pg.database.archiveSearch.search(key, { text: 'common', toSeq: 9999, limit: 5 });
    // Texts of one length rank alike: newest first.
    expect(early.map((m) => m.seq)).toEqual([9999, 9998, 9997, 9996, 9995]);
  });
});
