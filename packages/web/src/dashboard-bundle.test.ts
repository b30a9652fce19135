/**
 * The dashboard's script as tests and `ebb` under `--conditions=ebb-source` serve it: `browser/`
 * bundled from the sources by esbuild into one classic script, inlined in the page.
 */
import { expect, it } from 'vitest';
import { DASHBOARD_LIMITS } from './dashboard-api.js';
import { dashboardScript } from './dashboard-bundle.js';
import { dashboardPage } from './dashboard-page.js';

it('bundles browser/ into one inline script that carries the rules it shares with the server', async () => {
  const script = await dashboardScript();
  expect(script).toMatch(/^"use strict";\n\(\(\) => \{/);
  expect(script).not.toMatch(/^\s*(import|export)\s/m);
  // Nothing in it ends the page's <script> element early.
  expect(script).not.toMatch(/<\/script/i);
  // The modules the server uses, bundled in, not copies.
  expect(script).toContain('function thresholdReached(');
  // Core's rule, the take-back kinds' words and a limit's reset time (as `ebb status` says them), not
  // core: the rest of it (its errors, stores, rendering) is shaken out.
  expect(new Set(script.match(/core\/src\/[\w/-]+\.ts/g))).toEqual(
    new Set([
      'core/src/support/error-text.ts',
      'core/src/decision/threshold-reached.ts',
      'core/src/plans/take-back.ts',
      'core/src/usage/spend-limits.ts',
    ]),
  );
  expect(script).toContain(`historyPageMax: ${DASHBOARD_LIMITS.historyPageMax}`);
  expect(dashboardPage('a note', script)).toContain(`<script>${script}</script>`);
});
