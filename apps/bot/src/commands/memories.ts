/**
 * `ebb memories list [--channel KEY] [--speaker NAME] [--json] [--embedded]` and
 * `ebb memories forget (--id ID... | [--channel KEY] [--speaker NAME]) [--yes] [--embedded]`: what Ebb
 * remembers, and deleting it, so a team can honour a request to forget.
 *
 * `--channel` selects the memories extracted from a channel key; with a `*` it is a glob over the
 * stored channel keys as in config.toml (`slack:T1:C1*` is the channel and its threads). `--speaker`
 * selects the memories about what one person said (the author name Ebb stored). Both together: both
 * must hold. `--id` names memories by id (as `list` prints them) and goes alone.
 *
 * `forget` without `--yes` deletes nothing: it prints what it would delete and exits 2. With `--yes`
 * it deletes exactly the memories it printed. Exit codes: 0 done (or nothing matched), 1 an `--id`
 * names no memory or the stores failed, 2 a confirmation is needed or the arguments are wrong.
 * Forgetting deletes memories only: the archived messages and summaries they came from are kept.
 *
 * `list --json` prints one JSON document:
 *
 *   { "memories": [{ "id": string, "type": "fact" | "decision" | "preference" | "person" | "task" | "event",
 *                    "text": string, "importance": number, "speaker": string | null, "scope": string,
 *                    "fromSeq": number, "toSeq": number }] }   // by id
 */
import { patternMatches } from '@ebb/config';
import type { Memory } from '@ebb/core';
import type { CommandIo } from './io.js';
import { type StoreCommandDeps, type StoreSession, withStores } from './store-session.js';

export interface MemoryFilterArgs {
  /** `--channel KEY`: memories extracted from that channel; a `*` makes it a glob over channel keys. */
  readonly channel?: string | undefined;
  /** `--speaker NAME`: memories about what that person said. */
  readonly speaker?: string | undefined;
  /** `--embedded`: read the embedded database (only while Ebb is stopped). */
  readonly embedded?: boolean | undefined;
}

export interface MemoriesListArgs extends MemoryFilterArgs {
  readonly json?: boolean | undefined;
}

export interface MemoriesForgetArgs extends MemoryFilterArgs {
  /** `--id ID` (repeatable). */
  readonly ids?: readonly string[] | undefined;
  /** `--yes`: delete; without it, only show what would go. */
  readonly yes?: boolean | undefined;
}

export interface MemoryJson {
  readonly id: string;
  readonly type: Memory['type'];
  readonly text: string;
  readonly importance: number;
  readonly speaker: string | null;
  readonly scope: string;
  readonly fromSeq: number;
  readonly toSeq: number;
}

const EMBEDDED_HINT = 'The embedded database can only be read while Ebb is stopped.';
const MAX_TEXT_WIDTH = 100;

export async function memoriesList(
  args: MemoriesListArgs,
  io: CommandIo,
  deps: StoreCommandDeps = {},
): Promise<number> {
  const options = { command: 'ebb memories list', embeddedHint: EMBEDDED_HINT, embedded: args.embedded };
  return withStores(options, io, deps, async (session) => {
    const found = await matching(session, args);
    if (args.json) {
      io.out(JSON.stringify({ memories: found.map(toJson) }, null, 2));
      return 0;
    }
    if (found.length === 0) {
      io.out(`no memories${describeFilter(args)}`);
      return 0;
    }
    io.out(`${count(found.length)}${describeFilter(args)}`);
    for (const line of memoryTable(found)) io.out(line);
    return 0;
  });
}

export async function memoriesForget(
  args: MemoriesForgetArgs,
  io: CommandIo,
  deps: StoreCommandDeps = {},
): Promise<number> {
  const command = 'ebb memories forget';
  const ids = args.ids ?? [];
  if (ids.length > 0 && (args.channel !== undefined || args.speaker !== undefined)) {
    io.err(`${command}: --id goes alone; use --channel and --speaker without it`);
    return 2;
  }
  if (ids.length === 0 && args.channel === undefined && args.speaker === undefined) {
    io.err(`${command}: say what to forget: --id ID, --channel KEY or --speaker NAME`);
    return 2;
  }
  const options = { command, embeddedHint: EMBEDDED_HINT, embedded: args.embedded };
  return withStores(options, io, deps, async (session) => {
    let targets: Memory[];
    let unknown: string[] = [];
    if (ids.length > 0) {
      const wanted = new Set(ids);
      targets = (await session.memories.list({})).filter((m) => wanted.has(m.id));
      const known = new Set(targets.map((m) => m.id));
      unknown = [...wanted].filter((id) => !known.has(id));
      for (const id of unknown) io.err(`${command}: no memory has id ${id}`);
    } else {
      targets = await matching(session, args);
    }
    const failed = unknown.length > 0 ? 1 : 0;
    if (targets.length === 0) {
      io.out(`nothing to forget: no memories${describeFilter(args)}`);
      return failed;
    }
    if (!args.yes) {
      io.out(`would forget ${count(targets.length)}${describeFilter(args)}:`);
      for (const line of memoryTable(targets)) io.out(line);
      io.out('Nothing was deleted. Run again with --yes to forget these memories.');
      return 2;
    }
    const deleted = await session.memories.forget(targets.map((m) => m.id));
    io.out(`forgot ${count(deleted)}${describeFilter(args)}:`);
    for (const line of memoryTable(targets)) io.out(line);
    io.out('The archived messages and summaries they were extracted from are kept.');
    return failed;
  });
}

/** The memories the channel and speaker filters select, by id. */
async function matching(session: StoreSession, args: MemoryFilterArgs): Promise<Memory[]> {
  const speaker = args.speaker === undefined ? {} : { speaker: args.speaker };
  const pattern = args.channel;
  if (pattern === undefined) return session.memories.list(speaker);
  const keys = pattern.includes('*')
    ? (await session.channels.listChannels()).map((c) => c.key).filter((key) => patternMatches(pattern, key))
    : [pattern];
  const byId = new Map<string, Memory>();
  for (const channelKey of keys) {
    for (const memory of await session.memories.list({ channelKey, ...speaker })) byId.set(memory.id, memory);
  }
  return [...byId.values()].sort((a, b) => compareIds(a.id, b.id));
}

function compareIds(a: string, b: string): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}

function toJson(m: Memory): MemoryJson {
  return {
    id: m.id,
    type: m.type,
    text: m.text,
    importance: m.importance,
    speaker: m.speaker ?? null,
    scope: m.scope,
    fromSeq: m.fromSeq,
    toSeq: m.toSeq,
  };
}

function describeFilter(args: MemoryFilterArgs & { readonly ids?: readonly string[] | undefined }): string {
  const parts = [
    args.ids !== undefined && args.ids.length > 0 ? `with id ${args.ids.join(', ')}` : undefined,
    args.channel === undefined ? undefined : `from ${args.channel}`,
    args.speaker === undefined ? undefined : `about ${args.speaker}`,
  ].filter((p) => p !== undefined);
  return parts.length === 0 ? '' : ` ${parts.join(' ')}`;
}

function count(n: number): string {
  return `${n} ${n === 1 ? 'memory' : 'memories'}`;
}

/** One line per memory under a header, columns aligned; long texts clipped to one line. */
function memoryTable(memories: readonly Memory[]): string[] {
  const rows = [
    ['id', 'type', 'importance', 'speaker', 'scope', 'text'],
    ...memories.map((m) => [
      m.id,
      m.type,
      m.importance.toFixed(2),
      m.speaker ?? '-',
      m.scope,
      clip(m.text.replace(/\s+/g, ' ').trim()),
    ]),
  ];
  const widths = rows.reduce<number[]>(
    (max, row) => row.map((cell, i) => Math.max(max[i] ?? 0, cell.length)),
    [],
  );
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

function clip(text: string): string {
  return text.length <= MAX_TEXT_WIDTH ? text : `${text.slice(0, MAX_TEXT_WIDTH - 1)}…`;
}
