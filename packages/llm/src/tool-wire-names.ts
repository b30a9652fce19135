/**
 * Tool names on the OpenAI wire. Ebb names an MCP tool `server.tool`, but a function name must
 * match `^[a-zA-Z0-9_-]{1,64}$`, so the dot is sent as `__` (`github.search_issues` →
 * `github__search_issues`; server names cannot hold `__`, so the first `__` is always the dot).
 * Any other character outside the set becomes `_`, and a name still too long, or one that would
 * clash with another tool's, is cut and given a hash of the whole name (`…_3f9a1c02`). Names come
 * back from the model through the map of the tools offered, never by undoing the rules, so a clash
 * or a cut name still finds its tool.
 */
import { createHash } from 'node:crypto';

const WIRE_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX = 64;
const HASH_CHARS = 8;

/** The wire name of one tool, on its own (for tool calls already in the history). */
export function toWireName(name: string): string {
  const mapped = name.replaceAll('.', '__').replace(/[^a-zA-Z0-9_-]/g, '_');
  return WIRE_NAME.test(mapped) && mapped.length <= MAX ? mapped : hashed(mapped, name);
}

/** Wire names of the tools offered in one request, unique among them: Ebb's name → wire name. */
export function wireNames(names: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const taken = new Set<string>();
  for (const name of names) {
    let wire = toWireName(name);
    if (taken.has(wire)) wire = hashed(wire, name);
    taken.add(wire);
    out.set(name, wire);
  }
  return out;
}

function hashed(mapped: string, name: string): string {
  const hash = createHash('sha256').update(name).digest('hex').slice(0, HASH_CHARS);
  const head = (mapped === '' ? 'tool' : mapped).slice(0, MAX - HASH_CHARS - 1);
  return `${head}_${hash}`;
}
