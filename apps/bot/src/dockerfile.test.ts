/**
 * The image's dependency stage copies only manifests (so its layer is cached until a dependency
 * changes), and `npm ci` there needs every workspace's package.json: a new package must be listed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

it('copies the manifest of every workspace into the dependency stage', () => {
  const { workspaces } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  const manifests = workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [`${pattern}/package.json`];
    const dir = pattern.slice(0, -2);
    return readdirSync(join(ROOT, dir), { withFileTypes: true })
      .filter(
        (entry) => entry.isDirectory() && readdirSync(join(ROOT, dir, entry.name)).includes('package.json'),
      )
      .map((entry) => `${dir}/${entry.name}/package.json`);
  });
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY (\S+\/package\.json) /gm)].map((m) => m[1]);
  expect(manifests.length).toBeGreaterThan(10);
  expect([...copied].sort()).toEqual([...manifests].sort());
});
