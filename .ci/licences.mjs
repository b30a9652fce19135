#!/usr/bin/env node
/**
 * Third-party licence check: every package the lockfile installs must carry a licence that lets a
 * team ship Ebb under Apache-2.0. Run by `.ci/run` (and `npm run licences`); exits 1 naming each
 * package that fails, with its licence and whether it ships (a runtime dependency) or only builds
 * and tests Ebb (dev).
 *
 * It reads `package-lock.json`, not node_modules: the lockfile records each package's `license` as
 * published, covers the optional packages of other platforms that this machine never installs, and
 * is what `npm ci` installs from, so the check judges exactly what a clean clone gets.
 *
 * The rule, by SPDX expression (`A OR B` passes when one side passes, `A AND B` when both do):
 * - permissive licences pass everywhere;
 * - weak copyleft (MPL-2.0, file-level) passes for dev dependencies only: used unmodified to build
 *   the dashboard, never shipped in the image;
 * - anything else fails, a missing or unknown licence included (GPL, AGPL, LGPL, SSPL, BUSL, …).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PERMISSIVE = new Set([
  '0BSD',
  'Apache-2.0',
  'BlueOak-1.0.0',
  'BSD-2-Clause',
  'BSD-3-Clause',
  'CC0-1.0',
  'ISC',
  'MIT',
  'MIT-0',
  'Python-2.0',
  'Unlicense',
]);
export const DEV_ONLY = new Set(['MPL-2.0']);

/** Whether one SPDX expression is allowed for a package that is (or is not) dev-only. */
export function allows(expression, dev) {
  const tokens = String(expression ?? '').match(/\(|\)|[^\s()]+/g) ?? [];
  let at = 0;
  const leaf = () => {
    const token = tokens[at++];
    if (token === '(') {
      const inner = or();
      if (tokens[at++] !== ')') return false;
      return inner;
    }
    if (token === undefined) return false;
    const id = token.replace(/\+$/, '');
    return PERMISSIVE.has(id) || (dev && DEV_ONLY.has(id));
  };
  const and = () => {
    let ok = leaf();
    while (tokens[at] === 'AND') {
      at++;
      ok = leaf() && ok;
    }
    return ok;
  };
  const or = () => {
    let ok = and();
    while (tokens[at] === 'OR') {
      at++;
      ok = and() || ok;
    }
    return ok;
  };
  if (tokens.length === 0) return false;
  const ok = or();
  return ok && at === tokens.length;
}

/** The installed packages of a lockfile (v2/v3) whose licence is not allowed. */
export function refusedPackages(lock) {
  const refused = [];
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (!path.includes('node_modules/') || entry.link) continue;
    const licence = typeof entry.license === 'string' ? entry.license : undefined;
    const dev = entry.dev === true;
    if (!allows(licence, dev)) {
      refused.push({ name: path.slice(path.lastIndexOf('node_modules/') + 13), licence, dev });
    }
  }
  return refused;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const lockPath = process.argv[2] ?? 'package-lock.json';
  const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
  const refused = refusedPackages(lock);
  const total = Object.keys(lock.packages ?? {}).filter((p) => p.includes('node_modules/')).length;
  if (refused.length > 0) {
    for (const { name, licence, dev } of refused) {
      console.error(`licence refused: ${name} (${licence ?? 'no licence'}, ${dev ? 'dev' : 'runtime'})`);
    }
    console.error(
      `${refused.length} of ${total} packages in ${lockPath} carry a licence Ebb cannot ship with`,
    );
    process.exit(1);
  }
  console.log(`licences: all ${total} packages in ${lockPath} allowed`);
}
