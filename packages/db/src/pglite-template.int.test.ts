/**
 * The embedded database's template against real PGlite: made once with every migration, copied into
 * a new data directory, which then opens, migrates (nothing left to do) and keeps what it is given;
 * without a template, a new data directory is still created (initdb, the slow way).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Database, makeDefaultPgliteTemplate, migrate } from './create-db.js';
import { MIGRATIONS_FOLDER } from './pglite-template.js';
import { rowsOf } from './rows.js';

const scratch = mkdtempSync(join(tmpdir(), 'ebb-template-int-'));
let template: string;

beforeAll(async () => {
  const first = await makeDefaultPgliteTemplate(join(scratch, 'templates'));
  expect(first.made).toBe(true);
  template = first.path;
}, 120_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function count(database: Database, query: ReturnType<typeof sql>): Promise<number> {
  return Number(rowsOf<{ n: number | string }>(await database.db.execute(query))[0]?.n);
}

const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
  entries: unknown[];
};

describe('the PGlite template', () => {
  it('is made once', async () => {
    expect(await makeDefaultPgliteTemplate(join(scratch, 'templates'))).toEqual({
      path: template,
      made: false,
    });
  });

  it('seeds a new data directory that holds every migration, the postgres database only, and keeps its rows', async () => {
    const dataDir = join(scratch, 'seeded');
    const seeded = await createDb({ dataDir, pgliteTemplate: template });
    try {
      expect(seeded.kind === 'pglite' && seeded.origin).toBe('template');
      await migrate(seeded);
      expect(await count(seeded, sql`select count(*) as n from drizzle.__drizzle_migrations`)).toBe(
        journal.entries.length,
      );
      expect(rowsOf(await seeded.db.execute(sql`select datname from pg_database`))).toEqual([
        { datname: 'postgres' },
      ]);
      await seeded.db.execute(sql`insert into channels (key, platform) values ('web:seeded', 'web')`);
    } finally {
      await seeded.close();
    }

    const reopened = await createDb({ dataDir, pgliteTemplate: template });
    try {
      expect(reopened.kind === 'pglite' && reopened.origin).toBe('existing');
      expect(await count(reopened, sql`select count(*) as n from channels where key = 'web:seeded'`)).toBe(1);
    } finally {
      await reopened.close();
    }

    // The copy was written to, never the template: a second directory starts empty.
    const another = await createDb({ dataDir: join(scratch, 'another'), pgliteTemplate: template });
    try {
      expect(await count(another, sql`select count(*) as n from channels`)).toBe(0);
    } finally {
      await another.close();
    }
  });

  it('is not needed: without one a new data directory is created and migrated', async () => {
    const created = await createDb({
      dataDir: join(scratch, 'created'),
      pgliteTemplate: join(scratch, 'none'),
    });
    try {
      expect(created.kind === 'pglite' && created.origin).toBe('created');
      await migrate(created);
      expect(await count(created, sql`select count(*) as n from drizzle.__drizzle_migrations`)).toBe(
        journal.entries.length,
      );
    } finally {
      await created.close();
    }
  }, 120_000);
});
