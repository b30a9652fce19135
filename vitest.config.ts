import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources, never a build that may be stale: the packages' `ebb-source` export
// condition for the modules vitest loads (before Vite's default server conditions) and, through
// NODE_OPTIONS, for every process a test starts (`bin/ebb.mjs` then runs the sources through tsx).
// No test measures a rate (that depends on the machine): rates live in `npm run bench`.
export default defineConfig({
  // Not `module`, Vite's default first condition: a package whose `module` export is an ESM build
  // with extension-less imports (@opentelemetry/api's) then resolves to a file Node cannot load.
  ssr: { resolve: { conditions: ['ebb-source', 'node', 'development|production'] } },
  test: {
    include: ['{apps,packages,workers}/*/{src,test}/**/*.test.ts', '.ci/*.test.mjs'],
    env: { NODE_OPTIONS: '--conditions=ebb-source' },
    // Property tests run many cases; give them room on a 2-core machine. Hooks too: an embedded
    // pipeline's beforeEach boots PGlite and migrates it, which passed vitest's 10 s default on a
    // loaded machine.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Two test files at once even on 2 cores. vitest's default, one fewer worker than cores, runs
    // every file in turn there, and the end-to-end files spend much of their time waiting on Postgres,
    // Redis, child processes and the fake servers (discord.js paces itself to 50 REST requests a
    // second): one file's waits are the other's CPU.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
