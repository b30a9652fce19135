/**
 * Runs the zod schema over the parsed TOML and turns every zod issue into a `ConfigIssue` with a TOML
 * path, a rule and the value found. It then drops each offending key and parses again, so that the
 * cross-field rules can still run over everything that was valid and all problems of a file are
 * reported in one go. Leaves dropped this way are "tainted": a cross-field rule that involves one is
 * skipped for that place, since its fallback value would produce a misleading second complaint.
 */
import { PLATFORMS } from '@ebb/core';
import type { z } from 'zod';
import type { ConfigIssue } from './config-error.js';
import { type ConfigFile, configFileSchema, PROCESS_KEYS, SECTIONS, type Section } from './config-schema.js';
import { formatTomlPath } from './toml-path.js';

type Path = readonly (string | number)[];

export interface SchemaCheck {
  readonly issues: readonly ConfigIssue[];
  /** The file with every offending key removed; undefined only if that still did not parse. */
  readonly data: ConfigFile | undefined;
  readonly tainted: ReadonlySet<string>;
}

const MAX_PRUNE_ROUNDS = 4;

export function checkSchema(raw: Record<string, unknown>, file: string): SchemaCheck {
  const first = configFileSchema.safeParse(raw);
  if (first.success) return { issues: [], data: first.data, tainted: new Set() };

  const issues: ConfigIssue[] = [];
  const tainted = new Set<string>();
  const pruned = structuredClone(raw);
  let pending = first.error.issues;
  for (let round = 0; round < MAX_PRUNE_ROUNDS; round++) {
    for (const zodIssue of pending) {
      const path = toPath(zodIssue.path);
      if (round === 0) issues.push(...toConfigIssues(zodIssue, path, raw, file));
      if (zodIssue.code === 'unrecognized_keys') {
        for (const key of zodIssue.keys) remove(pruned, [...path, key]);
      } else {
        taint(tainted, path);
        remove(pruned, path);
      }
    }
    const again = configFileSchema.safeParse(pruned);
    if (again.success) return { issues, data: again.data, tainted };
    pending = again.error.issues;
  }
  return { issues, data: undefined, tainted };
}

/** Whether a schema problem removed `leaf` (or its section, or the whole place) from the layer `layerId`. */
export function isTainted(tainted: ReadonlySet<string>, layerId: string, leaf: string): boolean {
  const section = leaf.slice(0, leaf.indexOf('.'));
  return (
    tainted.has(`${layerId}|`) || tainted.has(`${layerId}|${section}`) || tainted.has(`${layerId}|${leaf}`)
  );
}

function taint(tainted: Set<string>, path: Path): void {
  const [head, second] = path;
  const at = (id: string, rest: Path) => tainted.add(`${id}|${rest.slice(0, 2).join('.')}`);
  if (typeof head !== 'string') return;
  if ((SECTIONS as readonly string[]).includes(head)) at('sections', path);
  else if ((PLATFORMS as readonly string[]).includes(head)) {
    if (second === undefined || (SECTIONS as readonly unknown[]).includes(second)) at(head, path.slice(1));
  } else if (head === 'channels' && typeof second === 'string') at(`channels:${second}`, path.slice(2));
}

function toConfigIssues(issue: z.core.$ZodIssue, path: Path, raw: unknown, file: string): ConfigIssue[] {
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        file,
        path: formatTomlPath([...path, key]),
        rule: unknownKeyRule(path, key),
        found: valueAt(raw, [...path, key]),
      }));
    case 'invalid_key':
      return [
        {
          file,
          path: formatTomlPath(path),
          rule: `invalid key: ${issue.issues[0]?.message ?? issue.message}`,
          found: path.at(-1),
        },
      ];
    default:
      return [{ file, path: formatTomlPath(path), rule: issue.message, found: valueAt(raw, path) }];
  }
}

/** `unknown key`, with a hint when the key is a likely typo or belongs one table down. */
function unknownKeyRule(parent: Path, key: string): string {
  const section = parent.at(-1);
  if (parent.length > 1 && typeof section === 'string' && PROCESS_KEYS[section as Section]?.includes(key)) {
    return `a setting of the whole process: set it in the top-level [${section}]`;
  }
  const siblings = tableShapeAt(parent);
  if (siblings === undefined) return 'unknown key';
  for (const [name, child] of Object.entries(siblings)) {
    if (key in (tableShape(child) ?? {})) {
      return `unknown key (it belongs in [${formatTomlPath([...parent, name])}])`;
    }
  }
  const close = Object.keys(siblings)
    .map((candidate) => ({ candidate, distance: editDistance(key, candidate) }))
    .filter(({ distance }) => distance <= Math.min(2, Math.floor(key.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0];
  return close === undefined ? 'unknown key' : `unknown key (did you mean ${close.candidate}?)`;
}

interface SchemaNode {
  _zod: {
    def: { type: string; shape?: Record<string, SchemaNode>; valueType?: SchemaNode; innerType?: SchemaNode };
  };
}

function unwrap(node: SchemaNode): SchemaNode {
  let current = node;
  while (current._zod.def.innerType !== undefined) current = current._zod.def.innerType;
  return current;
}

function tableShape(node: SchemaNode): Record<string, SchemaNode> | undefined {
  return unwrap(node)._zod.def.shape;
}

function tableShapeAt(path: Path): Record<string, SchemaNode> | undefined {
  let node: SchemaNode | undefined = configFileSchema as unknown as SchemaNode;
  for (const segment of path) {
    const def: SchemaNode['_zod']['def'] = unwrap(node)._zod.def;
    node = def.type === 'record' ? def.valueType : def.shape?.[String(segment)];
    if (node === undefined) return undefined;
  }
  return tableShape(node);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function toPath(path: readonly PropertyKey[]): Path {
  return path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function valueAt(root: unknown, path: Path): unknown {
  let node = root;
  for (const segment of path) {
    if (Array.isArray(node) && typeof segment === 'number') node = node[segment];
    else if (isTable(node)) node = node[String(segment)];
    else return undefined;
  }
  return node;
}

/**
 * Deletes the value at `path`. A problem inside an array removes the whole array; a required key that
 * is missing removes the table that lacks it.
 */
function remove(root: Record<string, unknown>, path: Path): void {
  const cut = path.findIndex((segment) => typeof segment === 'number');
  let target = cut === -1 ? path : path.slice(0, cut);
  while (target.length > 1 && valueAt(root, target) === undefined) target = target.slice(0, -1);
  const parent = valueAt(root, target.slice(0, -1));
  const last = target.at(-1);
  if (last !== undefined && isTable(parent)) delete parent[String(last)];
}
