import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS_FOLDER, makePgliteTemplate, pgliteTemplatePath, seedDataDir } from './pglite-template.js';

const scratches: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ebb-template-'));
  scratches.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of scratches.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A stand-in cluster: a file the copy must carry, and a subfolder. */
async function fakeCluster(dataDir: string): Promise<void> {
  mkdirSync(join(dataDir, 'base', '5'), { recursive: true });
  writeFileSync(join(dataDir, 'PG_VERSION'), '18\n');
  writeFileSync(join(dataDir, 'base', '5', '1259'), 'catalog');
}

describe('pgliteTemplatePath', () => {
  it('is the same for the same migrations and changes when one changes', () => {
    const migrations = join(scratch(), 'migrations');
    cpSync(MIGRATIONS_FOLDER, migrations, { recursive: true });
    const root = scratch();
    const before = pgliteTemplatePath(migrations, root);
    expect(pgliteTemplatePath(migrations, root)).toBe(before);
    expect(basename(before)).toMatch(/^pglite-[0-9a-f]{16}$/);

    const first = readdirSync(migrations).filter((name) => name.endsWith('.sql'))[0] ?? '';
    writeFileSync(join(migrations, first), `${readFileSync(join(migrations, first), 'utf8')}\n-- edited\n`);
    expect(pgliteTemplatePath(migrations, root)).not.toBe(before);
  });

  it('changes when a migration is added, in a subfolder too (the journal)', () => {
    const migrations = join(scratch(), 'migrations');
    cpSync(MIGRATIONS_FOLDER, migrations, { recursive: true });
    const before = pgliteTemplatePath(migrations);
    writeFileSync(join(migrations, 'meta', 'added.json'), '{}');
    expect(pgliteTemplatePath(migrations)).not.toBe(before);
  });
});

describe('makePgliteTemplate', () => {
  it('makes the template once and removes the templates of older migrations', async () => {
    const root = scratch();
    await fakeCluster(join(root, 'pglite-0000000000000000'));
    const path = join(root, 'pglite-1111111111111111');
    let made = 0;
    const create = async (dataDir: string) => {
      made++;
      await fakeCluster(dataDir);
    };

    expect(await makePgliteTemplate(path, create)).toEqual({ made: true });
    expect(await makePgliteTemplate(path, create)).toEqual({ made: false });
    expect(made).toBe(1);
    expect(readdirSync(root)).toEqual(['pglite-1111111111111111']);
    expect(readFileSync(join(path, 'base', '5', '1259'), 'utf8')).toBe('catalog');
  });

  it('takes the template another process made meanwhile, and leaves no copy of its own', async () => {
    const root = scratch();
    const path = join(root, 'pglite-1111111111111111');
    const racing = async (dataDir: string) => {
      await fakeCluster(dataDir);
      await fakeCluster(path); // the other process renames its template into place first
    };

    expect(await makePgliteTemplate(path, racing)).toEqual({ made: false });
    expect(readdirSync(root)).toEqual(['pglite-1111111111111111']);
  });

  it('leaves nothing behind when making it fails half way', async () => {
    const root = scratch();
    const path = join(root, 'pglite-1111111111111111');
    const failing = async (dataDir: string) => {
      await fakeCluster(dataDir);
      throw new Error('initdb ran out of memory');
    };

    await expect(makePgliteTemplate(path, failing)).rejects.toThrow('initdb ran out of memory');
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('seedDataDir', () => {
  it('copies the template into a missing directory, and into an empty one', async () => {
    const template = join(scratch(), 'template');
    await fakeCluster(template);
    const parent = scratch();

    expect(seedDataDir(join(parent, 'missing'), template)).toBe(true);
    expect(readFileSync(join(parent, 'missing', 'base', '5', '1259'), 'utf8')).toBe('catalog');

    mkdirSync(join(parent, 'empty'));
    expect(seedDataDir(join(parent, 'empty'), template)).toBe(true);
    expect(readFileSync(join(parent, 'empty', 'PG_VERSION'), 'utf8')).toBe('18\n');
    // Only the data directories: no copy left beside them.
    expect(readdirSync(parent).sort()).toEqual(['empty', 'missing']);
  });

  it('never touches a directory that holds anything', async () => {
    const template = join(scratch(), 'template');
    await fakeCluster(template);
    const dataDir = scratch();
    writeFileSync(join(dataDir, 'notes.txt'), 'mine');

    expect(seedDataDir(dataDir, template)).toBe(false);
    expect(readdirSync(dataDir)).toEqual(['notes.txt']);
  });

  it('does nothing without a template', () => {
    const dataDir = join(scratch(), 'data');
    expect(seedDataDir(dataDir, join(scratch(), 'no-template'))).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
  });
});
