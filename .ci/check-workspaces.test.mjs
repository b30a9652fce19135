import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workspaceProblems } from './check-workspaces.mjs';

describe('the workspace check', () => {
  const roots = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  /** A repository of workspaces: folder → [package.json fields, files]. */
  function repo(workspaces) {
    const root = mkdtempSync(join(tmpdir(), 'ebb-workspaces-'));
    roots.push(root);
    writeFileSync(join(root, 'package.json'), JSON.stringify({ workspaces: ['packages/*', 'bench'] }));
    for (const [folder, [pkg, files]] of Object.entries(workspaces)) {
      mkdirSync(join(root, folder, 'src'), { recursive: true });
      writeFileSync(join(root, folder, 'package.json'), JSON.stringify(pkg));
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(join(root, folder, file, '..'), { recursive: true });
        writeFileSync(join(root, folder, file), text);
      }
    }
    return root;
  }

  it('names an undeclared workspace import, and takes a declared one, its own name and a dist copy', () => {
    const root = repo({
      'packages/core': [{ name: '@ebb/core' }, { 'src/index.ts': "export * from '@ebb/core/model';\n" }],
      'packages/db': [
        { name: '@ebb/db', dependencies: { '@ebb/core': '*' } },
        {
          'src/store.ts': "import { x } from '@ebb/core';\n",
          'src/store.int.test.ts':
            "import { fresh } from '@ebb/testing/postgres';\nconst y = await import('@ebb/testing');\n",
          'dist/store.js': "import '@ebb/web';\n",
        },
      ],
      'packages/testing': [{ name: '@ebb/testing', dependencies: { '@ebb/core': '*' } }, {}],
      bench: [{ name: '@ebb/bench' }, { 'run.ts': "import { startEbb } from '@ebb/nowhere';\n" }],
    });
    expect(workspaceProblems(root)).toEqual([
      'packages/db/src/store.int.test.ts imports @ebb/testing, which packages/db/package.json does not declare (add it to dependencies, or to devDependencies when only tests use it)',
      'bench/run.ts imports @ebb/nowhere, which is no workspace package',
    ]);
  });

  it('names a cycle of declared packages, devDependencies included, once', () => {
    const root = repo({
      'packages/db': [{ name: '@ebb/db', devDependencies: { '@ebb/testing': '*' } }, {}],
      'packages/testing': [{ name: '@ebb/testing', dependencies: { '@ebb/db': '*' } }, {}],
      'packages/core': [{ name: '@ebb/core' }, {}],
    });
    expect(workspaceProblems(root)).toEqual([
      'the workspace packages depend on each other in a cycle: @ebb/db -> @ebb/testing -> @ebb/db',
    ]);
  });

  it('finds nothing in this repository', () => {
    expect(workspaceProblems()).toEqual([]);
  });
});
