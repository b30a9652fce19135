/**
 * The embedded database's template against real PGlite: made once with every migration, copied into
 * a new data directory, which then opens, migrates (nothing left to do) and keeps what it is given;
 * when the copy fails, a new data directory is still created (initdb, the slow way).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Logger, SILENT_LOGGER } from '@ebb/core';
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

  it('seeds a data directory named with a trailing slash', async () => {
    const seeded = await createDb({ dataDir: `${join(scratch, 'slash')}/`, pgliteTemplate: template });
    try {
      expect(seeded.kind === 'pglite' && seeded.origin).toBe('template');
      expect(await count(seeded, sql`select count(*) as n from channels`)).toBe(0);
    } finally {
      await seeded.close();
    }
    expect(readdirSync(join(scratch, 'slash'))).toContain('PG_VERSION');
  });

  it('is not needed: when copying it fails, one warning, and a new data directory is created and migrated', async () => {
    // A template the copy cannot finish (a FIFO stands in for no space or no permission: we run as root).
    const broken = join(scratch, 'broken');
    cpSync(template, broken, { recursive: true });
    execFileSync('mkfifo', [join(broken, 'pipe')]);
    const warnings: object[] = [];
    const logger: Logger = {
      ...SILENT_LOGGER,
      warn: (fields: object | string) => void warnings.push(Object(fields)),
    };
    const parent = join(scratch, 'fallback');
    mkdirSync(parent);

    const created = await createDb({ dataDir: join(parent, 'data'), pgliteTemplate: broken, logger });
    try {
      expect(created.kind === 'pglite' && created.origin).toBe('created');
      expect(warnings).toEqual([
        expect.objectContaining({ event: 'db.template_skipped', reason: expect.stringContaining('FIFO') }),
      ]);
      // Nothing of the failed copy is left beside the data directory: only the open database's lock.
      expect(readdirSync(parent).sort()).toEqual(['data', 'data.lock']);
      await migrate(created);
      expect(await count(created, sql`select count(*) as n from drizzle.__drizzle_migrations`)).toBe(
        journal.entries.length,
      );
    } finally {
      await created.close();
    }
    // Closed, it gives its lock up.
    expect(readdirSync(parent)).toEqual(['data']);
  }, 120_000);
});
