import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{apps,packages,workers}/*/{src,test}/**/*.test.ts'],
    // Property tests run many cases; give them room on a 2-core machine.
    testTimeout: 30_000,
  },
});
