/**
 * `ebb memories list [--channel KEY] [--speaker NAME] [--json] [--embedded]` and
 * `ebb memories forget (--id ID... | [--channel KEY] [--speaker NAME] [--match TEXT] [--archive]) [--yes] [--config PATH] [--embedded]`
 * (also `ebb forget ...`): what Ebb remembers, and forgetting it, so a team can honour a request to
 * forget.
 *
 * `--channel` selects the memories extracted from a channel key; with a `*` it is a glob over the
 * stored channel keys as in config.toml (`slack:T1:C1*` is the channel and its threads). `--speaker`
 * selects the memories about what one person said (the author name Ebb stored) and the messages
 * that person wrote. Both together: both must hold. `forget --match TEXT` selects every message
 * that holds TEXT (ignoring case, whoever wrote it, the bot's replies included) and the memories
 * whose text holds it; with `--speaker` too, both selections are forgotten, within `--channel`.
 * `--id` names memories by id (as `list` prints them) and goes alone.
 *
 * Forgetting removes the fact from everything Ebb feeds the model, not only the memory row:
 *
 * - the memories are deleted;
 * - the redacted messages are the speaker's messages and the bot's replies to them (`--speaker`:
 *   the turn that answered each, which repeats what they said), and the messages holding the text
 *   (`--match`), or else the source messages (`fromSeq..toSeq`) of the forgotten memories (`--id`,
 *   `--channel`);
 * - every active summary span holding a redacted message is summarized again from the archive, with
 *   those messages shown to the summarizer as `[message redacted]` (see `redactChannel`); the
 *   memories that summary call proposes are not stored;
 * - run checkpoints over those messages are cleared, and the forgotten memories are taken out of
 *   every other checkpoint; retired summary spans over them lose their text;
 * - `--archive` (with `--speaker` or `--match`) also overwrites those archived messages with the
 *   tombstone, author and seq kept. Without it the archive keeps them, and a later pass over
 *   messages not yet summarized may learn from them again.
 *
 * `forget` without `--yes` changes nothing: it prints what it would delete, redact and summarize again
 * and exits 2. Exit codes: 0 done (or nothing matched), 1 an `--id` names no memory or the stores
 * failed, 2 a confirmation is needed or the arguments are wrong.
 *
 * `list --json` prints one JSON document:
 *
 *   { "memories": [{ "id": string, "type": "fact" | "decision" | "preference" | "person" | "task" | "event",
 *                    "text": string, "importance": number, "speaker": string | null, "scope": string,
 *                    "fromSeq": number, "toSeq": number }] }   // by id
 */
import {
  passSettingsResolver,
  previewRedaction,
  type RedactionPreview,
  type RedactionReport,
  redactChannel,
} from '@ebb/compaction';
import type { Memory, SeqRange } from '@ebb/core';
import { channelKeys, redactionsFor, type SourcedMemory } from './forget-targets.js';
import type { CommandIo } from './io.js';
import { readConfig, type StoreCommandDeps, type StoreSession, withStores } from './store-session.js';

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
  /** `--match TEXT`: every message holding TEXT (ignoring case) and the memories whose text holds it. */
  readonly match?: string | undefined;
  /** `--archive` (with `--speaker` or `--match`): also overwrite those archived messages. */
  readonly archive?: boolean | undefined;
  /** `--config PATH`: the config whose summarizer writes the summaries again. */
  readonly config?: string | undefined;
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
/** The shortest `--match`: a shorter one would match most of a channel. */
const MIN_MATCH_CHARS = 4;

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
  if (
    ids.length > 0 &&
    (args.channel !== undefined || args.speaker !== undefined || args.match !== undefined)
  ) {
    io.err(`${command}: --id goes alone; use --channel, --speaker and --match without it`);
    return 2;
  }
  if (
    ids.length === 0 &&
    args.channel === undefined &&
    args.speaker === undefined &&
    args.match === undefined
  ) {
    io.err(`${command}: say what to forget: --id ID, --channel KEY, --speaker NAME or --match TEXT`);
    return 2;
  }
  if (args.match !== undefined && args.match.trim().length < MIN_MATCH_CHARS) {
    io.err(
      `${command}: --match needs at least ${MIN_MATCH_CHARS} characters, so it cannot sweep up every message`,
    );
    return 2;
  }
  if (args.archive && args.speaker === undefined && args.match === undefined) {
    io.err(`${command}: --archive redacts the selected messages: use it with --speaker NAME or --match TEXT`);
    return 2;
  }
  const options = { command, embeddedHint: EMBEDDED_HINT, embedded: args.embedded };
  return withStores(options, io, deps, async (session) => {
    let targets: SourcedMemory[];
    let unknown: string[] = [];
    if (ids.length > 0) {
      const wanted = new Set(ids);
      targets = (await sourced(session, {})).filter((m) => wanted.has(m.memory.id));
      const known = new Set(targets.map((m) => m.memory.id));
      unknown = [...wanted].filter((id) => !known.has(id));
      for (const id of unknown) io.err(`${command}: no memory has id ${id}`);
    } else {
      targets = await sourced(session, args);
    }
    const failed = unknown.length > 0 ? 1 : 0;
    const redactions = await redactionsFor(session, args, targets);
    if (targets.length === 0 && redactions.length === 0) {
      io.out(`nothing to forget: no memories${describeFilter(args)}`);
      return failed;
    }
    const memories = targets.map((t) => t.memory);
    if (!args.yes) {
      io.out(
        `would forget ${count(memories.length)}${describeFilter(args)}${memories.length > 0 ? ':' : ''}`,
      );
      if (memories.length > 0) for (const line of memoryTable(memories)) io.out(line);
      for (const r of redactions) {
        io.out(describePreview(await previewRedaction(session.channels, r), args.archive === true));
      }
      io.out('Nothing was changed. Run again with --yes to forget these.');
      return 2;
    }
    // The summarizer comes from config.toml, as the worker's does; a broken config stops here,
    // before anything changes.
    const config = redactions.length === 0 ? undefined : await readConfig(command, args.config, io, deps);
    if (typeof config === 'number') return config;
    // The memories and the archive are what select the messages to redact: they change last, so a
    // run that fails part-way (Postgres gone, the summarizer down) can simply be run again.
    let unresolved = 0;
    if (config !== undefined) {
      // Its calls are the channel's cost, as a pass's are (recorded in its usage).
      const settingsFor = passSettingsResolver({
        config: () => config,
        env: session.env,
        usage: session.usage,
      });
      for (const r of redactions) {
        const report = await redactChannel(
          { channels: session.channels, runs: session.runs, settingsFor },
          { ...r, archive: args.archive === true },
        );
        io.out(describeReport(report));
        if (report.inFlight > 0) {
          io.err(
            `${command}: ${report.inFlight} pass(es) of ${report.channelKey} over these messages are queued or running ` +
              'and may have read them before; run this again once they finish.',
          );
        }
        if (report.unresolved.length > 0) {
          unresolved += report.unresolved.length;
          io.err(
            `${command}: passes kept replacing ${report.channelKey}'s summaries over ${ranges(report.unresolved)}; ` +
              'run this again once they finish.',
          );
        }
      }
    }
    // A checkpoint of an unfinished run would store a forgotten memory again on its retry.
    await session.runs.dropCheckpointMemories(memories.map((m) => m.text));
    const deleted = await session.memories.forget(memories.map((m) => m.id));
    io.out(`forgot ${count(deleted)}${describeFilter(args)}${memories.length > 0 ? ':' : ''}`);
    if (memories.length > 0) for (const line of memoryTable(memories)) io.out(line);
    io.out(
      args.archive
        ? 'The archived messages were overwritten with a tombstone (seq and author kept).'
        : 'The archived messages are kept: search_history and read_history (allowed by default) can still read them to the model; with --speaker or --match, --archive overwrites them too.',
    );
    return unresolved > 0 ? 1 : failed;
  });
}

/** The memories the channel and speaker filters select, by id. */
async function matching(session: StoreSession, args: MemoryFilterArgs): Promise<Memory[]> {
  return (await sourced(session, args)).map((m) => m.memory);
}

/**
 * The memories the filters select, each with the channel it came from, by id: within `--channel`,
 * those about `--speaker` and those whose text holds `--match` (either selects; neither: all).
 */
async function sourced(
  session: StoreSession,
  args: MemoryFilterArgs & { readonly match?: string | undefined },
): Promise<SourcedMemory[]> {
  const needle = args.match?.toLowerCase();
  const byId = new Map<string, SourcedMemory>();
  for (const channelKey of await channelKeys(session, args.channel)) {
    for (const memory of await session.memories.list({ channelKey })) {
      const bySpeaker = args.speaker !== undefined && memory.speaker === args.speaker;
      const byText = needle !== undefined && memory.text.toLowerCase().includes(needle);
      const selectors = args.speaker !== undefined || needle !== undefined;
      if (!selectors || bySpeaker || byText) byId.set(memory.id, { memory, channelKey });
    }
  }
  return [...byId.values()].sort((a, b) => compareIds(a.memory.id, b.memory.id));
}

function describePreview(preview: RedactionPreview, archive: boolean): string {
  const parts = [
    `${messagesCount(preview.messages)} to redact`,
    preview.spans.length === 0
      ? 'no summary span to summarize again'
      : `${spansCount(preview.spans)} to summarize again (${ranges(preview.spans)})`,
    'checkpoints over them to clear',
    ...(archive ? ['the archived messages to overwrite'] : []),
  ];
  return `${preview.channelKey}: would redact: ${parts.join('; ')}`;
}

function describeReport(report: RedactionReport): string {
  const parts = [
    `${messagesCount(report.messages)} redacted`,
    `${spansCount(report.spans)} summarized again${report.spans.length > 0 ? ` (${ranges(report.spans)})` : ''}`,
    `${report.checkpoints} checkpoint(s) cleared`,
    `${report.retiredSpans} retired span(s) blanked`,
    ...(report.archived > 0 ? [`${messagesCount(report.archived)} overwritten in the archive`] : []),
  ];
  return `${report.channelKey}: ${parts.join('; ')}`;
}

function messagesCount(n: number): string {
  return `${n} ${n === 1 ? 'message' : 'messages'}`;
}

function spansCount(spans: readonly SeqRange[]): string {
  return `${spans.length} summary ${spans.length === 1 ? 'span' : 'spans'}`;
}

function ranges(list: readonly SeqRange[]): string {
  return list.map((r) => `${r.fromSeq}..${r.toSeq}`).join(', ');
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

function describeFilter(
  args: MemoryFilterArgs & {
    readonly ids?: readonly string[] | undefined;
    readonly match?: string | undefined;
  },
): string {
  const parts = [
    args.ids !== undefined && args.ids.length > 0 ? `with id ${args.ids.join(', ')}` : undefined,
    args.channel === undefined ? undefined : `from ${args.channel}`,
    args.speaker === undefined ? undefined : `about ${args.speaker}`,
    args.match === undefined ? undefined : `holding "${args.match}"`,
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
