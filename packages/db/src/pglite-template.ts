/**
 * A PGlite cluster made ahead of the first start. Creating a cluster runs initdb in wasm (about 4.4 s
 * and 700 MB on these machines), while copying one already made takes about 0.15 s, so a fresh clone's
 * first `ebb dev` would spend most of its start in initdb. `npm install` and `npm start` make the
 * template (`npm run pglite-template`), and `createDb` seeds an empty data directory from it.
 *
 * The template's name holds a hash of PGlite's version and of the migrations: a template never opens
 * under another PGlite, it already holds every migration it was made with (the start's migration
 * check finds nothing to do), and a new migration or PGlite makes a new one. One is kept.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The migrations drizzle-kit generates, found from this file so any cwd works. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../../migrations', import.meta.url));

/** Where templates live: the repository's `node_modules/.cache` (never in a Docker image's runtime). */
export const PGLITE_TEMPLATES_ROOT = fileURLToPath(
  new URL('../../../node_modules/.cache/ebb', import.meta.url),
);

const TEMPLATE_PREFIX = 'pglite-';

/** The template this PGlite and these migrations make: `ROOT/pglite-<hash>`. */
export function pgliteTemplatePath(
  migrationsFolder = MIGRATIONS_FOLDER,
  root = PGLITE_TEMPLATES_ROOT,
): string {
  const hash = createHash('sha256').update(`pglite ${pgliteVersion()}\n`);
  for (const file of filesUnder(migrationsFolder)) {
    hash.update(`${relative(migrationsFolder, file)}\n`).update(readFileSync(file));
  }
  return join(root, `${TEMPLATE_PREFIX}${hash.digest('hex').slice(0, 16)}`);
}

/**
 * Makes the template at `path` unless it is there: `create` builds a cluster in the directory it is
 * given (and closes it). Built beside the final name and renamed into place, so a build cut short
 * leaves no half template; older templates in the same folder are removed.
 */
export async function makePgliteTemplate(
  path: string,
  create: (dataDir: string) => Promise<void>,
): Promise<{ readonly made: boolean }> {
  if (existsSync(path)) return { made: false };
  mkdirSync(dirname(path), { recursive: true });
  const building = `${path}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  try {
    await create(building);
    try {
      renameSync(building, path);
    } catch (err) {
      // Another process (a second `npm start`, a test) made the same template first: theirs is as good.
      if (!existsSync(path)) throw err;
      return { made: false };
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  const root = dirname(path);
  for (const name of readdirSync(root)) {
    const other = join(root, name);
    if (name.startsWith(TEMPLATE_PREFIX) && other !== path) rmSync(other, { recursive: true, force: true });
  }
  return { made: true };
}

/**
 * Copies the template into `dataDir` when the template exists and `dataDir` is missing or empty;
 * says whether it did. The copy is made beside `dataDir` and renamed over it, so a start cut short
 * never leaves half a cluster, and a directory holding anything is never touched.
 */
export function seedDataDir(dataDir: string, template: string): boolean {
  if (!existsSync(template)) return false;
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) return false;
  const copying = `${dataDir}.seeding-${process.pid}`;
  try {
    cpSync(template, copying, { recursive: true });
    // rename(2) replaces an empty directory.
    renameSync(copying, dataDir);
  } finally {
    rmSync(copying, { recursive: true, force: true });
  }
  return true;
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
