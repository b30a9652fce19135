/**
 * `npm test` leaves `git status` clean: the browser tests' screenshots land where git ignores them
 * (a tracked file there would be rewritten by every run), and the README's picture is committed
 * outside it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { ARTIFACTS, README_SHOT, shot, updateReadmeShot } from './screenshots.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const git = (...args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });

it('saves screenshots where git ignores them, with nothing tracked there', () => {
  // Without --no-index: a tracked file is not ignored, whatever .gitignore says.
  for (const path of [shot('dashboard'), shot('dashboard-usage-chart')]) {
    const checked = git('check-ignore', '-q', relative(ROOT, path));
    expect({ path: relative(ROOT, path), ignored: checked.status === 0 }).toMatchObject({ ignored: true });
  }
  expect(git('ls-files', relative(ROOT, ARTIFACTS)).stdout).toBe('');
});

it('shows the committed picture in the README, rewritten only when asked', async () => {
  const path = relative(ROOT, README_SHOT);
  expect(readFileSync(`${ROOT}/README.md`, 'utf8')).toContain(`](${path})`);
  expect(existsSync(README_SHOT)).toBe(true);
  expect(git('ls-files', '--error-unmatch', path).status).toBe(0);
  expect(await updateReadmeShot('dashboard', {})).toBe(false);
});
