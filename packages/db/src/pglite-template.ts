/**
 * A PGlite cluster made ahead of the first start. Creating a cluster runs initdb in wasm (about 4.4 s
 * and ~880 MiB peak on these machines), while copying one already made takes 0.35–0.5 s, so a fresh
 * clone's first `ebb dev` would spend most of its start in initdb. `npm install` and `npm start` make
 * the template (`npm run pglite-template`), and `createDb` seeds an empty data directory from it.
 *
 * The template's name holds a hash of PGlite's version and of the migrations: a template never opens
 * under another PGlite, it already holds every migration it was made with (the start's migration
 * check finds nothing to do), and a new migration or PGlite makes a new one. One is kept.
 *
 * Several processes share the folder (two `npm start`s, parallel test workers), so nothing in it is
 * used, or removed, half way:
 * - a template is built in `pglite-<hash>.building-<pid>-<tag>`, gets its completion mark last and is
 *   renamed into place: a `pglite-<hash>` without the mark is never copied (and is made again);
 * - the build that made a template removes the finished templates of other hashes, first renaming
 *   each away (`.removing-…`) so that a copy under way fails rather than copying half of it, and the
 *   work left by processes that are gone; never a build of a live process.
 *
 * "Live" is a pid this machine's process table shows, so processes in different PID namespaces (a
 * container and its host sharing the folder through a bind mount) can take each other's builds for
 * dead: the loser's rename then fails, which is one warning and an initdb at its start, nothing worse.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The migrations drizzle-kit generates, found from this file so any cwd works. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../../migrations', import.meta.url));

/** Where templates live: the repository's `node_modules/.cache` (never in a Docker image's runtime). */
export const PGLITE_TEMPLATES_ROOT = fileURLToPath(
  new URL('../../../node_modules/.cache/ebb', import.meta.url),
);

/** A finished template: `pglite-` and 16 hex digits, nothing after. */
const TEMPLATE_NAME = /^pglite-[0-9a-f]{16}$/;
/** Work under way beside the templates: `<template>.building-<pid>-<tag>` or `.removing-…`. */
const TEMPLATE_WORK = /^pglite-[0-9a-f]{16}\.(?:building|removing)-(\d+)(?:-[0-9a-f]+)?$/;
/** Written last into a built template: a directory without it is not one (yet, or any more). */
const READY_MARK = 'ebb-template-ready';
/** Part of the hash: a change to what a template holds (the completion mark) makes new ones. */
const TEMPLATE_FORMAT = 2;

/** The template this PGlite and these migrations make: `ROOT/pglite-<hash>`. */
export function pgliteTemplatePath(
  migrationsFolder = MIGRATIONS_FOLDER,
  root = PGLITE_TEMPLATES_ROOT,
): string {
  const hash = createHash('sha256').update(`pglite ${pgliteVersion()}\ntemplate ${TEMPLATE_FORMAT}\n`);
  for (const file of filesUnder(migrationsFolder)) {
    hash.update(`${relative(migrationsFolder, file)}\n`).update(readFileSync(file));
  }
  return join(root, `pglite-${hash.digest('hex').slice(0, 16)}`);
}

/** Whether `path` holds a whole template: its build finished, and nobody has begun to remove it. */
export function pgliteTemplateReady(path: string): boolean {
  return existsSync(join(path, READY_MARK));
}

/**
 * Makes the template at `path` unless it is there: `create` builds a cluster in the directory it is
 * given (and closes it). Built beside the final name and renamed into place, so a build cut short
 * leaves no half template; then older templates in the same folder are removed.
 */
export async function makePgliteTemplate(
  path: string,
  create: (dataDir: string) => Promise<void>,
): Promise<{ readonly made: boolean }> {
  if (pgliteTemplateReady(path)) return { made: false };
  const root = dirname(path);
  mkdirSync(root, { recursive: true });
  const building = workPath(path, 'building');
  try {
    await create(building);
    writeFileSync(join(building, READY_MARK), `${basename(path)}\n`);
    // Another process (a second `npm start`, a test) made the same template first: theirs is as good.
    if (!putInPlace(building, path)) return { made: false };
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  for (const name of readdirSync(root)) {
    if (TEMPLATE_NAME.test(name) && name !== basename(path)) retire(join(root, name));
  }
  removeLeftovers(root, TEMPLATE_WORK);
  return { made: true };
}

/**
 * Copies the template into `dataDir` when the template is whole and `dataDir` is missing or empty;
 * says whether it did. The copy is made beside `dataDir` and renamed over it, so a start cut short
 * never leaves half a cluster, and a directory holding anything is never touched. Throws when the
 * copy fails (no space, no permission, the template removed under it); nothing of it is left then.
 */
export function seedDataDir(dataDir: string, template: string): boolean {
  // `data/` would put the copy, `data/.seeding-…`, inside the directory it is to replace.
  const target = resolve(dataDir);
  if (!pgliteTemplateReady(template)) return false;
  if (existsSync(target) && readdirSync(target).length > 0) return false;
  const seeding = `${basename(target)}.seeding-`;
  removeLeftovers(dirname(target), new RegExp(`^${escapeRegExp(seeding)}(\\d+)(?:-[0-9a-f]+)?$`));
  const copying = `${target}.seeding-${workTag()}`;
  try {
    cpSync(template, copying, { recursive: true });
    // Removed while it was copied, in place (the rename in `retire` makes the copy fail instead).
    if (!existsSync(join(copying, READY_MARK)))
      throw new Error(`the template ${template} was removed while it was copied`);
    rmSync(join(copying, READY_MARK));
    // rename(2) replaces an empty directory.
    renameSync(copying, target);
  } finally {
    rmSync(copying, { recursive: true, force: true });
  }
  return true;
}

/** Renames the built template into place; false when another process's is there already. */
function putInPlace(building: string, path: string): boolean {
  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(building, path);
      return true;
    } catch (err) {
      if (pgliteTemplateReady(path)) return false;
      if (attempt > 0 || !existsSync(path)) throw err;
      // A directory without the mark (never used: left half made, or half removed): ours replaces it.
      retire(path);
    }
  }
}

/** `<pid>-<random>`: the pid tells a leftover of a dead process; the rest, two builds of one process. */
function workTag(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

function workPath(template: string, kind: 'building' | 'removing'): string {
  return `${template}.${kind}-${workTag()}`;
}

/** Removes a template, renamed away first so no process copies, or takes, a half-removed one. */
function retire(template: string): void {
  const removing = workPath(template, 'removing');
  try {
    renameSync(template, removing);
  } catch (err) {
    // Another process removed it first.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  rmSync(removing, { recursive: true, force: true });
}

/** Removes the entries of `folder` that `work` matches whose process (the first group, a pid) is gone. */
function removeLeftovers(folder: string, work: RegExp): void {
  if (!existsSync(folder)) return;
  for (const name of readdirSync(folder)) {
    const pid = Number(work.exec(name)?.[1]);
    if (pid > 0 && !isRunning(pid)) rmSync(join(folder, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function pgliteVersion(): string {
  // The package exports no ./package.json: found from its entry point (dist/index.*).
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = join(dirname(entry), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(folder, entry.name);
      return entry.isDirectory() ? filesUnder(path) : entry.isFile() ? [path] : [];
    })
    .sort();
}
