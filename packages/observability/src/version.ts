/**
 * The version this process runs: every package of the repository shares the root's (semver; a test
 * keeps them equal), read from this package's package.json beside `src` and `dist` alike. Shown by
 * `ebb --version`, `/healthz` and the start-up lines.
 */
import { createRequire } from 'node:module';

export const EBB_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string })
  .version;
