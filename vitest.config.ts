import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Tests that measure what the stack keeps up with at a set rate: they run after every other file, on
 * their own, so another file's CPU never lowers the rate they reach (beside one, the pacing test's
 * channels reached 20–24 of their 30 turns a second, and so tested a lighter burst than it says).
 */
const ALONE = ['apps/bot/src/pacing.int.test.ts'];

// Tests run the TypeScript sources, never a build that may be stale: the packages' `ebb-source` export
// condition for the modules vitest loads (before Vite's default server conditions) and, through
// NODE_OPTIONS, for every process a test starts (`bin/ebb.mjs` then runs the sources through tsx).
export default defineConfig({
  ssr: { resolve: { conditions: ['ebb-source', 'module', 'node', 'development|production'] } },
  test: {
    // No include here: `extends: true` adds a root include to each project's, so `alone` would run everything.
    env: { NODE_OPTIONS: '--conditions=ebb-source' },
    // Property tests run many cases; give them room on a 2-core machine.
    testTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'ebb',
          include: ['{apps,packages,workers}/*/{src,test}/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          // Two test files at once even on 2 cores. vitest's default, one fewer worker than cores,
          // runs every file in turn there, and the end-to-end files spend much of their time waiting
          // on Postgres, Redis, child processes and the fake servers (discord.js paces itself to 50
          // REST requests a second): one file's waits are the other's CPU.
          maxWorkers: Math.max(2, availableParallelism() - 1),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'alone', include: ALONE, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
