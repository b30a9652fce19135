#!/usr/bin/env node
// Makes the PGlite cluster a new embedded data directory is copied from, so the first `ebb dev` of a
// clone skips initdb (packages/db/src/pglite-template.ts). Run by `npm install` and `npm start` after
// the build. When the template for these migrations and this PGlite is there it only looks (without
// loading PGlite and drizzle, so `npm start` stays quick). A failure is a warning, never a failed
// install: without a template the first start creates the database itself, in a few seconds more.
import { existsSync } from 'node:fs';
import { pgliteTemplatePath } from '../dist/pglite-template.js';

if (!existsSync(pgliteTemplatePath())) {
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
