#!/usr/bin/env node
// `npm run lint`'s check of the workspace packages as npm sees them (dependency-cruiser checks
// modules; to it a workspace import is "undetermined", so it can tell neither of these):
//
// - every `@ebb/*` package a workspace's files import (sources, tests, benchmarks, scripts) is
//   declared in that workspace's package.json, in `dependencies` or `devDependencies`: npm installs
//   and orders the workspaces by those, and an undeclared import works only by the hoisting;
// - the declared graph has no cycle (devDependencies included): a package whose tests need a second
//   package that depends back on the first cannot be built, published or reasoned about on its own.
//
// Prints each problem with the file or the cycle, and exits 1 when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = /\.(ts|mts|js|mjs|cjs)$/;
const SKIPPED = new Set(['node_modules', 'dist', 'coverage', '.ebb']);
const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)['"](@ebb\/[a-z0-9-]+)(?:\/[^'"]*)?['"]/g;

/** The workspaces the root package.json names, each as its folder, name and declared `@ebb/*` packages. */
export function readWorkspaces(root = ROOT) {
  const { workspaces } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const folders = workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    return readdirSync(join(root, parent)).map((name) => `${parent}/${name}`);
  });
  return folders
    .filter((folder) => statSync(join(root, folder, 'package.json'), { throwIfNoEntry: false })?.isFile())
    .map((folder) => {
      const pkg = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8'));
      const declared = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((name) =>
        name.startsWith('@ebb/'),
      );
      return { folder, name: pkg.name, declared };
    });
}

/** The `@ebb/*` packages each source file below `folder` imports: [file, package][]. */
export function importsOf(root, folder) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIPPED.has(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (SOURCE.test(entry.name))
        for (const match of readFileSync(path, 'utf8').matchAll(IMPORT))
          found.push([relative(root, path), match[1]]);
    }
  };
  walk(join(root, folder));
  return found;
}

/** Every cycle of the declared graph, once each, as the names along it (the first repeated at the end). */
export function cyclesOf(workspaces) {
  const edges = new Map(workspaces.map((w) => [w.name, w.declared.filter((d) => d !== w.name)]));
  const cycles = [];
  const seen = new Set();
  const visit = (name, path) => {
    const at = path.indexOf(name);
    if (at >= 0) {
      const cycle = path.slice(at);
      const key = [...cycle].sort().join(' ');
      if (!seen.has(key)) {
        seen.add(key);
        cycles.push([...cycle, name]);
      }
      return;
    }
    for (const next of edges.get(name) ?? []) visit(next, [...path, name]);
  };
  for (const name of edges.keys()) visit(name, []);
  return cycles;
}

/** The problems, one line each. */
export function workspaceProblems(root = ROOT) {
  const workspaces = readWorkspaces(root);
  const known = new Set(workspaces.map((w) => w.name));
  const problems = [];
  for (const { folder, name, declared } of workspaces) {
    const reported = new Set();
    for (const [file, used] of importsOf(root, folder)) {
      if (used === name || declared.includes(used) || reported.has(used)) continue;
      reported.add(used);
      problems.push(
        known.has(used)
          ? `${file} imports ${used}, which ${folder}/package.json does not declare (add it to dependencies, or to devDependencies when only tests use it)`
          : `${file} imports ${used}, which is no workspace package`,
      );
    }
  }
  for (const cycle of cyclesOf(workspaces))
    problems.push(`the workspace packages depend on each other in a cycle: ${cycle.join(' -> ')}`);
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = workspaceProblems();
  for (const problem of problems) console.error(`check-workspaces: ${problem}`);
  if (problems.length > 0) process.exit(1);
  console.log(
    `check-workspaces: ${readWorkspaces().length} workspaces, every @ebb import declared, no cycle`,
  );
}
