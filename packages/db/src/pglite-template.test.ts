import { type ChildProcess, spawn } from 'node:child_process';
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
import {
  MIGRATIONS_FOLDER,
  makePgliteTemplate,
  pgliteTemplatePath,
  pgliteTemplateReady,
  seedDataDir,
} from './pglite-template.js';

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

/** A finished template, as `makePgliteTemplate` leaves one. */
async function fakeTemplate(path: string): Promise<string> {
  await makePgliteTemplate(path, fakeCluster);
  return path;
}

/** A process that runs until killed: the owner of another process's work in progress. */
async function otherProcess(): Promise<ChildProcess & { pid: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child as ChildProcess & { pid: number };
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid ?? 0;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
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
      await fakeTemplate(path); // the other process puts its template in place first
    };

    expect(await makePgliteTemplate(path, racing)).toEqual({ made: false });
    expect(readdirSync(root)).toEqual(['pglite-1111111111111111']);
  });

  it("never removes another process's build under way, and removes the leftovers of dead ones", async () => {
    const root = scratch();
    const path = join(root, 'pglite-1111111111111111');
    const other = await otherProcess();
    try {
      // Another process is building this template (a parallel test worker, a second `npm start`).
      const live = `${path}.building-${other.pid}`;
      await fakeCluster(live);
      const dead = `${join(root, 'pglite-0000000000000000')}.building-${await deadPid()}`;
      await fakeCluster(dead);

      expect(await makePgliteTemplate(path, fakeCluster)).toEqual({ made: true });
      expect(readdirSync(root).sort()).toEqual([basename(path), basename(live)]);
      expect(readFileSync(join(live, 'base', '5', '1259'), 'utf8')).toBe('catalog');
    } finally {
      other.kill();
    }
  });

  it('lets two builds of one template in one process (test threads) both finish: one makes it, the other takes it', async () => {
    const root = scratch();
    const path = join(root, 'pglite-1111111111111111');
    const loserBuilding = deferred();
    const winnerDone = deferred();
    const loser = makePgliteTemplate(path, async (dataDir) => {
      await fakeCluster(dataDir);
      loserBuilding.resolve();
      await winnerDone.promise;
      // Its half-made cluster is still where it left it.
      expect(readFileSync(join(dataDir, 'base', '5', '1259'), 'utf8')).toBe('catalog');
      writeFileSync(join(dataDir, 'postmaster.opts'), 'loser');
    });
    await loserBuilding.promise;
    const winner = await makePgliteTemplate(path, fakeCluster);
    winnerDone.resolve();

    expect(winner).toEqual({ made: true });
    expect(await loser).toEqual({ made: false });
    expect(readdirSync(root)).toEqual([basename(path)]);
    expect(pgliteTemplateReady(path)).toBe(true);
    expect(existsSync(join(path, 'postmaster.opts'))).toBe(false);
  });

  it('makes again a template that was left without its completion mark', async () => {
    const root = scratch();
    const path = join(root, 'pglite-1111111111111111');
    await fakeCluster(path); // half made, or half removed, by some other hand
    expect(pgliteTemplateReady(path)).toBe(false);

    expect(await makePgliteTemplate(path, fakeCluster)).toEqual({ made: true });
    expect(pgliteTemplateReady(path)).toBe(true);
    expect(readdirSync(root)).toEqual([basename(path)]);
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
    const template = await fakeTemplate(join(scratch(), 'pglite-1111111111111111'));
    const parent = scratch();

    expect(seedDataDir(join(parent, 'missing'), template)).toBe(true);
    expect(readFileSync(join(parent, 'missing', 'base', '5', '1259'), 'utf8')).toBe('catalog');

    mkdirSync(join(parent, 'empty'));
    expect(seedDataDir(join(parent, 'empty'), template)).toBe(true);
    expect(readFileSync(join(parent, 'empty', 'PG_VERSION'), 'utf8')).toBe('18\n');
    // Only the data directories: no copy left beside them.
    expect(readdirSync(parent).sort()).toEqual(['empty', 'missing']);
  });

  it('copies the cluster only: the completion mark stays with the template', async () => {
    const template = await fakeTemplate(join(scratch(), 'pglite-1111111111111111'));
    const dataDir = join(scratch(), 'data');
    expect(seedDataDir(dataDir, template)).toBe(true);
    expect(readdirSync(dataDir).sort()).toEqual(['PG_VERSION', 'base']);
  });

  it('never copies a template without its completion mark (half made, or half removed)', async () => {
    const template = join(scratch(), 'pglite-1111111111111111');
    await fakeCluster(template);
    const dataDir = join(scratch(), 'data');

    expect(seedDataDir(dataDir, template)).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('copies into the directory named with a trailing slash, not into a folder inside it', async () => {
    const template = await fakeTemplate(join(scratch(), 'pglite-1111111111111111'));
    const parent = scratch();
    mkdirSync(join(parent, 'empty'));

    expect(seedDataDir(`${join(parent, 'missing')}/`, template)).toBe(true);
    expect(seedDataDir(`${join(parent, 'empty')}/`, template)).toBe(true);
    expect(readdirSync(parent).sort()).toEqual(['empty', 'missing']);
    expect(readdirSync(join(parent, 'missing')).sort()).toEqual(['PG_VERSION', 'base']);
    expect(readdirSync(join(parent, 'empty')).sort()).toEqual(['PG_VERSION', 'base']);
  });

  it('removes the copies that starts killed half way left, not those of a start still copying', async () => {
    const template = await fakeTemplate(join(scratch(), 'pglite-1111111111111111'));
    const parent = scratch();
    const dataDir = join(parent, 'data');
    const other = await otherProcess();
    try {
      const stale = `${dataDir}.seeding-${await deadPid()}`;
      const live = `${dataDir}.seeding-${other.pid}`;
      await fakeCluster(stale);
      await fakeCluster(live);

      expect(seedDataDir(dataDir, template)).toBe(true);
      expect(readdirSync(parent).sort()).toEqual(['data', basename(live)]);
    } finally {
      other.kill();
    }
  });

  it('never touches a directory that holds anything', async () => {
    const template = await fakeTemplate(join(scratch(), 'pglite-1111111111111111'));
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
