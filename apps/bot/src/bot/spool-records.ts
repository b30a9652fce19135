/**
 * The file spool's records, pure (no I/O): how `FileInboundSpool` (`file-inbound-spool.ts`) encodes
 * a line, reads the lines of its file back into the pending entries, and scans its file and the dead
 * letters for what a scrub must drop. The file format itself is described at the top of
 * `file-inbound-spool.ts`; the writes that make it durable are `durable-files.ts`.
 */
import type { SpooledItem } from '@ebb/core';

/** One record of the spool file: a push, or a removal. */
export type Line =
  | { readonly id: string; readonly message: SpooledItem }
  | { readonly removed: readonly string[] };

/** Pending entries per channel; each channel's map is in arrival order (a `Map` keeps insertion order). */
export type Pending = Map<string, Map<string, SpooledItem>>;

/** A dead letter as `deadLetter` writes it. */
export interface DeadLetter {
  readonly deadLettered: string;
  readonly reason: string;
  readonly id: string;
  readonly message: SpooledItem;
}

/** A record as a line of the file, its newline included. */
export function encodeLine(line: Line): string {
  return `${JSON.stringify(line)}\n`;
}

/** The file a scrub writes: exactly the entries still pending, each with its id. */
export function pendingText(pending: Pending): string {
  return [...pending.values()]
    .flatMap((entries) => [...entries].map(([id, message]) => encodeLine({ id, message })))
    .join('');
}

/** A channel's pending entries, made empty when it has none yet. */
export function entriesOf(pending: Pending, channelKey: string): Map<string, SpooledItem> {
  let entries = pending.get(channelKey);
  if (!entries) {
    entries = new Map();
    pending.set(channelKey, entries);
  }
  return entries;
}

/**
 * A file's whole lines (empty ones dropped), where they end (`end`: the bytes past it are a last line
 * without its newline, a write that never finished), and whether there is such an unfinished line.
 */
export function wholeLines(bytes: Buffer): {
  readonly lines: string[];
  readonly end: number;
  readonly unfinished: boolean;
} {
  const end = bytes.lastIndexOf(0x0a) + 1;
  const lines = bytes.subarray(0, end).toString('utf8').split('\n');
  return { lines: lines.filter((line) => line !== ''), end, unfinished: end < bytes.length };
}

/**
 * The pending entries the file's lines leave, each push less the removals after it, and the highest
 * id number among the pushes (ids continue from it, so a restart never reuses one still pending).
 */
export function readPending(lines: readonly string[]): {
  readonly pending: Pending;
  readonly lastId: number;
} {
  const pending: Pending = new Map();
  const channelOf = new Map<string, string>();
  let lastId = 0;
  for (const raw of lines) {
    const line = readRecord(raw)?.line;
    if (!line) continue;
    if ('removed' in line) {
      for (const id of line.removed) {
        const channelKey = channelOf.get(id);
        const entries = channelKey === undefined ? undefined : pending.get(channelKey);
        entries?.delete(id);
        if (channelKey !== undefined && entries?.size === 0) pending.delete(channelKey);
      }
      continue;
    }
    channelOf.set(line.id, line.message.channelKey);
    entriesOf(pending, line.message.channelKey).set(line.id, line.message);
    lastId = Math.max(lastId, idNumber(line.id));
  }
  return { pending, lastId };
}

/** `f12` → 12 (ids written before ids were counters were `f` and a clock reading: still numbers). */
function idNumber(id: string): number {
  const match = /^f(\d+)$/.exec(id);
  return match ? Number(match[1]) : 0;
}

/**
 * The record in a line and where it starts (0: the line is that record, nothing before it), or
 * undefined for a line that holds no record. A line that does not parse may be a torn fragment with
 * a whole record appended to it (as versions before the torn-line fix wrote): the record is read
 * from where it starts (`{"id":` or `{"removed":` cannot occur inside a JSON string, whose quotes
 * are escaped).
 */
function readRecord(raw: string): { readonly line: Line; readonly start: number } | undefined {
  for (let start = 0; start >= 0 && start < raw.length; start = nextRecord(raw, start + 1)) {
    try {
      const line: unknown = JSON.parse(raw.slice(start));
      if (isLine(line)) return { line, start };
    } catch {
      // Not a record from here: try the next place one starts.
    }
  }
  return undefined;
}

function nextRecord(raw: string, from: number): number {
  const starts = [raw.indexOf('{"id":', from), raw.indexOf('{"removed":', from)].filter((i) => i >= 0);
  return starts.length === 0 ? -1 : Math.min(...starts);
}

function isLine(value: unknown): value is Line {
  if (typeof value !== 'object' || value === null) return false;
  const line = value as Record<string, unknown>;
  if (Array.isArray(line.removed)) return line.removed.every((id) => typeof id === 'string');
  const message = line.message as Partial<SpooledItem> | undefined;
  return typeof line.id === 'string' && typeof message?.channelKey === 'string';
}

/**
 * The records of the spool file, and whether it holds bytes no record accounts for (a fragment: a
 * line that is no record or has one glued to it, an unfinished last line), whose text may be anyone's.
 */
export function scanSpoolFile(bytes: Buffer): { readonly records: Line[]; readonly fragments: boolean } {
  const { lines, unfinished } = wholeLines(bytes);
  const read = lines.map(readRecord);
  return {
    records: read.flatMap((r) => (r ? [r.line] : [])),
    fragments: unfinished || read.some((r) => r?.start !== 0),
  };
}

/**
 * The dead letters' lines, each with its record when it is one (a line of other JSON is kept as it
 * is), and whether the file holds a fragment (a line that is not JSON, an unfinished last line: a
 * write that failed, so no dead letter), which goes when the file is written anew.
 */
export function scanDeadLetters(bytes: Buffer): {
  readonly lines: { readonly raw: string; readonly record: DeadLetter | undefined }[];
  readonly fragments: boolean;
} {
  const { lines, unfinished } = wholeLines(bytes);
  let fragments = unfinished;
  const kept: { raw: string; record: DeadLetter | undefined }[] = [];
  for (const raw of lines) {
    try {
      const value: unknown = JSON.parse(raw);
      const message = (value as { message?: Partial<SpooledItem> } | null)?.message;
      kept.push({ raw, record: typeof message?.channelKey === 'string' ? (value as DeadLetter) : undefined });
    } catch {
      fragments = true;
    }
  }
  return { lines: kept, fragments };
}
