#!/usr/bin/env node
// Makes the PGlite cluster a new embedded data directory is copied from, so the first `ebb dev` of a
// clone skips initdb (packages/db/src/pglite-template.ts). Run by `npm install` and `npm start` after
// the build. When the template for these migrations and this PGlite is there it only looks (without
// loading PGlite and drizzle, so `npm start` stays quick). A failure is a warning, never a failed
// install: without a template the first start creates the database itself, in a few seconds more.
//
// `--only-for-new-data-dir` (`npm start`): nothing to make when this start copies nothing, because
// DATABASE_URL is set (Postgres) or the embedded data directory (EBB_DATA_DIR, default ./.ebb, then
// pglite/, as `ebb dev` opens it) already holds a cluster. After a pull that adds a migration, that
// saves a start about 4 s and ~880 MiB for a template nobody would copy.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pgliteTemplatePath, pgliteTemplateReady } from '../dist/pglite-template.js';

function copiesNothing() {
  if (process.env.DATABASE_URL) return true;
  return existsSync(join(process.env.EBB_DATA_DIR || './.ebb', 'pglite', 'PG_VERSION'));
}

const onlyForNewDataDir = process.argv.includes('--only-for-new-data-dir');
if (!(onlyForNewDataDir && copiesNothing()) && !pgliteTemplateReady(pgliteTemplatePath())) {
  const started = performance.now();
  try {
    const { makeDefaultPgliteTemplate } = await import('../dist/index.js');
    const { path } = await makeDefaultPgliteTemplate();
    console.log(
      `made the embedded database template in ${Math.round(performance.now() - started)} ms: ${path}`,
    );
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    console.warn(
      `could not make the embedded database template (a new data directory will be created at start instead): ${reason}`,
    );
  }
}
