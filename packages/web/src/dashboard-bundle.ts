/**
 * The dashboard page's script: the TypeScript in `browser/` (its entry `browser/main.ts`), bundled by
 * esbuild into one IIFE that the page inlines. One set of options, two ways to it:
 *
 * - from a build (`npm run build`, `npm start`, the Docker image): after tsc, `bin/build-dashboard.mjs`
 *   writes `dist/dashboard-browser.js` and the compiled server reads that file, so what runs in production
 *   needs no esbuild (a devDependency) and no sources;
 * - from the sources (tests, and `ebb` under `NODE_OPTIONS=--conditions=ebb-source`): this module runs
 *   as `.ts`, and the first page request bundles `browser/` with esbuild's API (some 50 ms), so a test
 *   always serves the code it reads, never a build that may be stale.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

// Both src/ and dist/ sit one level under the package: the same URLs hold from either.
const ENTRY = fileURLToPath(new URL('../src/browser/main.ts', import.meta.url));
const BUILT = fileURLToPath(new URL('../dist/dashboard-browser.js', import.meta.url));
const FROM_SOURCES = import.meta.url.endsWith('.ts');

async function bundle(): Promise<string> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    format: 'iife',
    target: 'es2022',
    charset: 'utf8',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
    // `@ebb/core` from its sources, as tests resolve it; its `sideEffects: false` lets esbuild keep
    // only what the page imports (thresholdReached, errorText), not the whole core.
    conditions: ['ebb-source'],
  });
  const [file] = result.outputFiles;
  if (file === undefined) throw new Error(`esbuild wrote nothing for ${ENTRY}`);
  return file.text;
}

/** The script, from the build's bundle or, running from the sources, bundled now. */
export async function dashboardScript(): Promise<string> {
  if (FROM_SOURCES) return bundle();
  try {
    return await readFile(BUILT, 'utf8');
  } catch (err) {
    throw new Error(`the dashboard's script is not built (${BUILT}): run npm run build`, { cause: err });
  }
}

/** The build's step: bundles `browser/` into `dist/dashboard-browser.js`; returns the path. */
export async function writeDashboardBundle(): Promise<string> {
  const script = await bundle();
  await mkdir(dirname(BUILT), { recursive: true });
  await writeFile(BUILT, script);
  return BUILT;
}
