/**
 * The inbound spool on local disk, and the rule for Redis and the disk together.
 *
 * `FileInboundSpool` is an append-only JSON Lines file: a push appends `{"id":…,"message":…}` (and
 * syncs it to disk before it resolves), a removal appends `{"removed":[…]}`, and once nothing is
 * pending the file is emptied, so it only ever holds one outage. The file is read once, at the first
 * use; after that the pending entries live in memory, per channel in arrival order, and a read never
 * touches the disk. One process writes it (each bot replica has its own, under its own
 * `EBB_DATA_DIR`), and every change runs in one queue, so emptying the file can never take a push
 * that came after the removal. Ids continue from the highest one in the file, so a restart never
 * reuses an id still pending. A line a crash or a full disk left unfinished was never acknowledged:
 * it is cut off when the file is read (or, after a failed write, at once), so the next record starts
 * on a line of its own; a record an older version glued to such a fragment is read back. An entry
 * the archive refuses for good is moved to `<name>.dead.jsonl` beside the file.
 *
 * A take-back (`scrub`) leaves no line of its messages behind, the lines of entries already removed
 * included: when either file holds one (or a fragment no record accounts for), it is written anew
 * (`<file>.tmp` beside it, synced, renamed over it, the directory synced), the spool file to exactly
 * the entries still pending, each with its id, and the dead letters to the other records. A crash
 * leaves the old file or the new one whole, and at worst a `.tmp` that the next scrub overwrites.
 *
 * `FallbackInboundSpool`, Redis with the file: the rule that keeps order and loses nothing.
 *
 * 1. **The disk first.** Redis here may run without persistence, so an acknowledged message is
 *    written to the file (synced) and to Redis, the copy every replica can see; it is acknowledged
 *    when either took it. With the disk refusing (full, read-only), Redis alone holds it.
 * 2. **A channel replays oldest first across both stores.** A read merges the file's entries and
 *    Redis's by the messages' time, each store's own order kept; a message both hold is one entry
 *    (its two copies removed together).
 * 3. **A store that cannot be read is "unknown", never "empty".** The file is this process's whole
 *    record, so with Redis unreachable a channel replays from the file alone, unless Redis alone holds
 *    one of its messages (the disk refused it): then its read fails and the channel waits for Redis,
 *    spooling what arrives meanwhile behind it. A copy left in Redis is replayed when Redis is back,
 *    as a duplicate the archive skips (idempotent on the platform id). A file that cannot be read
 *    cannot be written either, so it holds nothing of this process's: Redis's entries go ahead (a
 *    broken disk must not hold every channel back); with both unreadable, the read fails.
 *
 * What this cannot order: while Redis is unreachable, a channel whose messages were spooled by two
 * replicas replays each replica's file on its own, so the two may interleave out of order (none is
 * lost); and a message Redis alone held in a previous process (the disk refused it) may replay after
 * newer ones if Redis is unreachable when it does.
 */
import type { FileHandle } from 'node:fs/promises';
import { appendFile, mkdir, open, readFile, rename, rm, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { InboundSpool, SpoolEntry, SpooledItem } from '@ebb/core';
import { holdsTextOf } from '@ebb/queue';

type Line = { readonly id: string; readonly message: SpooledItem } | { readonly removed: readonly string[] };

/** Pending entries per channel; each channel's map is in arrival order (a `Map` keeps insertion order). */
type Pending = Map<string, Map<string, SpooledItem>>;

export class FileInboundSpool implements InboundSpool {
  readonly #path: string;
  /** Where entries the archive refuses for good go: `spool.jsonl` → `spool.dead.jsonl`. */
  readonly deadLetterPath: string;
  #pending: Promise<Pending> | undefined;
  #lastId = 0;
  /** Bytes of whole lines in the file: a failed write is cut back to it. */
  #size = 0;
  /** The file may end in a fragment that could not be cut off: the next write starts a new line. */
  #torn = false;
  /** Every change, in order, one at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
    this.deadLetterPath = path.endsWith('.jsonl') ? `${path.slice(0, -6)}.dead.jsonl` : `${path}.dead`;
  }

  push(message: SpooledItem): Promise<void> {
    return this.#serial(async (pending) => {
      const id = `f${this.#lastId + 1}`;
      await this.#append({ id, message }, { sync: true });
      this.#lastId++;
      entriesOf(pending, message.channelKey).set(id, message);
    });
  }

  async peek(channelKey: string, limit: number): Promise<SpoolEntry[]> {
    const entries: SpoolEntry[] = [];
    for (const [id, message] of (await this.#load()).get(channelKey) ?? []) {
      if (entries.length >= limit) break;
      entries.push({ id, message });
    }
    return entries;
  }

  remove(channelKey: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return Promise.resolve();
    return this.#serial((pending) => this.#removeIn(pending, channelKey, ids));
  }

  async channels(): Promise<readonly string[]> {
    return [...(await this.#load()).keys()];
  }

  deadLetter(channelKey: string, entry: SpoolEntry, reason: string): Promise<string> {
    return this.#serial(async (pending) => {
      const record = { deadLettered: new Date().toISOString(), reason, id: entry.id, message: entry.message };
      await appendLine(this.deadLetterPath, JSON.stringify(record));
      await this.#removeIn(pending, channelKey, [entry.id]);
      return this.deadLetterPath;
    });
  }

  /**
   * Forgets the messages' pending entries (and edits of them) at once, as a removal does; then writes
   * each file anew if it holds a line of them, pending or not (see the top). A failure leaves their
   * lines on disk, where the next scrub finds them again.
   */
  scrub(channelKey: string, platformMessageIds: readonly string[]): Promise<number> {
    if (platformMessageIds.length === 0) return Promise.resolve(0);
    const ids = new Set(platformMessageIds);
    return this.#serial(async (pending) => {
      const dropped = new Set<string>();
      for (const [key, entries] of pending) {
        for (const [id, item] of entries) {
          if (holdsTextOf(item, channelKey, ids) && entries.delete(id)) dropped.add(id);
        }
        if (entries.size === 0) pending.delete(key);
      }
      const onDisk = scanSpoolFile(await readIfAny(this.#path));
      for (const line of onDisk.records) {
        if ('id' in line && holdsTextOf(line.message, channelKey, ids)) dropped.add(line.id);
      }
      if (dropped.size > 0 || onDisk.fragments) {
        const text = [...pending.values()]
          .flatMap((entries) => [...entries].map(([id, message]) => `${JSON.stringify({ id, message })}\n`))
          .join('');
        await replaceFile(this.#path, text);
        this.#size = Buffer.byteLength(text);
        this.#torn = false;
        await syncDirectory(dirname(this.#path));
      }
      return dropped.size + (await this.#scrubDeadLetters(channelKey, ids));
    });
  }

  /** Writes the dead letters anew without the messages' records (and any fragment); returns how many went. */
  async #scrubDeadLetters(channelKey: string, ids: ReadonlySet<string>): Promise<number> {
    const dead = scanDeadLetters(await readIfAny(this.deadLetterPath));
    const kept = dead.lines.filter((line) => !holdsTextOf(line.record?.message, channelKey, ids));
    const dropped = dead.lines.length - kept.length;
    if (dropped > 0 || dead.fragments) {
      await replaceFile(this.deadLetterPath, kept.map((line) => `${line.raw}\n`).join(''));
      await syncDirectory(dirname(this.deadLetterPath));
    }
    return dropped;
  }

  /** Runs `change` after every change before it, with the pending entries loaded. */
  #serial<T>(change: (pending: Pending) => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => change(await this.#load()));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Forgets the entries at once (a failed write below brings them back only after a restart, as
   * duplicates the archive skips), then records it: by emptying the file when nothing is left.
   */
  async #removeIn(pending: Pending, channelKey: string, ids: readonly string[]): Promise<void> {
    const entries = pending.get(channelKey);
    const removed = ids.filter((id) => entries?.delete(id));
    if (entries?.size === 0) pending.delete(channelKey);
    if (removed.length === 0) return;
    if (pending.size === 0) {
      try {
        await truncate(this.#path, 0);
        this.#size = 0;
        this.#torn = false;
        return;
      } catch {
        // Fall through: record the removal instead.
      }
    }
    await this.#append({ removed }, { sync: false });
  }

  async #append(line: Line, options: { readonly sync: boolean }): Promise<void> {
    const data = `${this.#torn ? '\n' : ''}${JSON.stringify(line)}\n`;
    await mkdir(dirname(this.#path), { recursive: true });
    let handle: FileHandle | undefined;
    try {
      handle = await open(this.#path, 'a');
      await handle.writeFile(data);
      if (options.sync) await handle.datasync();
      this.#size += Buffer.byteLength(data);
      this.#torn = false;
    } catch (err) {
      // A write that failed part way (a full disk) must not leave a fragment the next line joins.
      if (handle)
        this.#torn = await truncate(this.#path, this.#size).then(
          () => false,
          () => true,
        );
      throw err;
    } finally {
      await handle?.close();
    }
  }

  /** The pending entries, read from the file at the first call; a failed read is tried again next time. */
  #load(): Promise<Pending> {
    this.#pending ??= this.#read().catch((err: unknown) => {
      this.#pending = undefined;
      throw err;
    });
    return this.#pending;
  }

  async #read(): Promise<Pending> {
    let bytes = Buffer.alloc(0);
    try {
      bytes = await readFile(this.#path);
    } catch (err) {
      // No file (or no directory to hold one): nothing pending.
      const { code } = err as NodeJS.ErrnoException;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    // A last line without its newline is a write that never finished (so never acknowledged).
    const end = bytes.lastIndexOf(0x0a) + 1;
    this.#size = bytes.length;
    if (end < bytes.length) {
      this.#torn = await truncate(this.#path, end).then(
        () => false,
        () => true,
      );
      if (!this.#torn) this.#size = end;
    }
    const whole = bytes.subarray(0, end).toString('utf8');
    const pending: Pending = new Map();
    const channelOf = new Map<string, string>();
    for (const raw of whole.split('\n')) {
      const line = parseLine(raw);
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
      this.#lastId = Math.max(this.#lastId, idNumber(line.id));
    }
    return pending;
  }
}

function entriesOf(pending: Pending, channelKey: string): Map<string, SpooledItem> {
  let entries = pending.get(channelKey);
  if (!entries) {
    entries = new Map();
    pending.set(channelKey, entries);
  }
  return entries;
}

/** `f12` → 12 (ids written before ids were counters were `f` and a clock reading: still numbers). */
function idNumber(id: string): number {
  const match = /^f(\d+)$/.exec(id);
  return match ? Number(match[1]) : 0;
}

/**
 * One line of the file, or undefined for a line that holds no record. A line that does not parse
 * may be a torn fragment with a whole record appended to it (as versions before the torn-line fix
 * wrote): the record is read from where it starts (`{"id":` or `{"removed":` cannot occur inside a
 * JSON string, whose quotes are escaped).
 */
function parseLine(raw: string): Line | undefined {
  return readRecord(raw)?.line;
}

/** The record in a line and where it starts (0: the line is that record, nothing before it). */
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

/** A dead letter as `deadLetter` writes it. */
interface DeadLetter {
  readonly deadLettered: string;
  readonly reason: string;
  readonly id: string;
  readonly message: SpooledItem;
}

/** A file's whole lines, and whether it ends in an unfinished one (dropped here). */
function wholeLines(bytes: Buffer): { readonly lines: string[]; readonly unfinished: boolean } {
  const end = bytes.lastIndexOf(0x0a) + 1;
  const lines = bytes.subarray(0, end).toString('utf8').split('\n');
  return { lines: lines.filter((line) => line !== ''), unfinished: end < bytes.length };
}

/**
 * The records of the spool file, and whether it holds bytes no record accounts for (a fragment: a
 * line that is no record or has one glued to it, an unfinished last line), whose text may be anyone's.
 */
function scanSpoolFile(bytes: Buffer): { readonly records: Line[]; readonly fragments: boolean } {
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
function scanDeadLetters(bytes: Buffer): {
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

/** A file's bytes; none when there is no file. */
async function readIfAny(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    const { code } = err as NodeJS.ErrnoException;
    if (code === 'ENOENT' || code === 'ENOTDIR') return Buffer.alloc(0);
    throw err;
  }
}

/**
 * Replaces a file with `text`, whole or not at all: written to `<path>.tmp` beside it, synced, and
 * renamed over it. The caller syncs the directory next (`syncDirectory`), so that the rename, the
 * old text's going, survives a crash too.
 */
async function replaceFile(path: string, text: string): Promise<void> {
  const temp = `${path}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'w');
    await handle.writeFile(text);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, path);
  } catch (err) {
    await handle?.close().catch(() => {});
    await rm(temp, { force: true }).catch(() => {});
    throw err;
  }
}

async function syncDirectory(path: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    await handle.sync();
  } catch (err) {
    // Some systems cannot open or sync a directory (Windows): the rename is as durable as they allow.
    const { code } = err as NodeJS.ErrnoException;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL') throw err;
  } finally {
    await handle?.close();
  }
}

/**
 * Appends one line to a file nothing else tracks (the dead letters), synced: on a line of its own
 * even if the file ends in a fragment.
 */
async function appendLine(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const last = await lastByte(path);
  await appendFile(path, `${last === undefined || last === '\n' ? '' : '\n'}${text}\n`, { flush: true });
}

async function lastByte(path: string): Promise<string | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    const { size } = await handle.stat();
    if (size === 0) return undefined;
    const { buffer } = await handle.read(Buffer.alloc(1), 0, 1, size - 1);
    return buffer.toString('utf8');
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/** Tags a store's id so `remove` knows where it lives: `l:` the file, `r:` Redis; a message both hold is `l:… r:…`. */
const LOCAL = 'l:';
const SHARED = 'r:';

/** Redis (shared by every replica) with the file (this process's durable record): the rule is at the top. */
export class FallbackInboundSpool implements InboundSpool {
  readonly #shared: InboundSpool;
  readonly #local: InboundSpool;
  /**
   * Channels with a message Redis alone holds (the disk refused it): their replay order needs Redis's
   * answer. Dropped when a read of both stores finds the channel empty.
   */
  readonly #sharedOnly = new Set<string>();

  constructor(shared: InboundSpool, local: InboundSpool) {
    this.#shared = shared;
    this.#local = local;
  }

  async push(message: SpooledItem): Promise<void> {
    const [local, shared] = await Promise.allSettled([this.#local.push(message), this.#shared.push(message)]);
    if (local.status === 'fulfilled') return;
    if (shared.status === 'rejected') throw local.reason;
    this.#sharedOnly.add(message.channelKey);
  }

  async peek(channelKey: string, limit: number): Promise<SpoolEntry[]> {
    const [local, shared] = await Promise.allSettled([
      this.#local.peek(channelKey, limit),
      this.#shared.peek(channelKey, limit),
    ]);
    if (local.status === 'rejected' && shared.status === 'rejected') throw local.reason;
    // Redis unreadable is unknown, not empty: the file's entries go ahead only if it holds them all.
    if (shared.status === 'rejected' && this.#sharedOnly.has(channelKey)) throw shared.reason;
    // The file unreadable: nothing this process spooled is only there (a push to it fails too), so
    // Redis's entries go ahead rather than every channel waiting on a broken disk.
    const merged = mergeInOrder(
      local.status === 'fulfilled' ? local.value : [],
      shared.status === 'fulfilled' ? shared.value : [],
    ).slice(0, Math.max(0, limit));
    if (merged.length === 0 && shared.status === 'fulfilled') this.#sharedOnly.delete(channelKey);
    return merged;
  }

  async remove(channelKey: string, ids: readonly string[]): Promise<void> {
    const { local, shared } = splitIds(ids);
    await Promise.all([
      this.#local.remove(channelKey, local),
      // A copy left in Redis (Redis away) is archived already: it replays as a duplicate, skipped.
      this.#shared.remove(channelKey, shared).catch(() => {}),
    ]);
  }

  /** Either store's channels when the other cannot say: a channel missing is found on a later round. */
  async channels(): Promise<readonly string[]> {
    const [local, shared] = await Promise.allSettled([this.#local.channels(), this.#shared.channels()]);
    if (local.status === 'rejected' && shared.status === 'rejected') throw local.reason;
    const of = (r: PromiseSettledResult<readonly string[]>) => (r.status === 'fulfilled' ? r.value : []);
    return [...new Set([...of(local), ...of(shared)])];
  }

  /** Into the file's dead letters, or Redis's when the disk refuses; then out of both stores. */
  async deadLetter(channelKey: string, entry: SpoolEntry, reason: string): Promise<string> {
    const { local, shared } = splitIds([entry.id]);
    try {
      const where = await this.#local.deadLetter(
        channelKey,
        { id: local[0] ?? '', message: entry.message },
        reason,
      );
      await this.#shared.remove(channelKey, shared).catch(() => {});
      return where;
    } catch (err) {
      const [id] = shared;
      if (id === undefined) throw err;
      const where = await this.#shared.deadLetter(channelKey, { id, message: entry.message }, reason);
      await this.#local.remove(channelKey, local).catch(() => {});
      return where;
    }
  }

  /**
   * Both stores, or it fails: a store that could not be scrubbed (Redis away, a broken disk) may
   * still hold the text, so the take-back is not done until a later try reaches it.
   */
  async scrub(channelKey: string, platformMessageIds: readonly string[]): Promise<number> {
    const [local, shared] = await Promise.allSettled([
      this.#local.scrub(channelKey, platformMessageIds),
      this.#shared.scrub(channelKey, platformMessageIds),
    ]);
    if (local.status === 'rejected') throw local.reason;
    if (shared.status === 'rejected') throw shared.reason;
    return local.value + shared.value;
  }
}

/**
 * The file's entries and Redis's, oldest first by the message's time; each store's own order is
 * kept (a merge, not a sort), and a Redis entry the file also holds travels with the file's entry.
 */
function mergeInOrder(local: readonly SpoolEntry[], shared: readonly SpoolEntry[]): SpoolEntry[] {
  const copies = new Map(shared.map((e) => [e.message.platformMessageId, e.id]));
  const mine = local.map((e) => {
    const copy = copies.get(e.message.platformMessageId);
    copies.delete(e.message.platformMessageId);
    return { id: `${LOCAL}${e.id}${copy === undefined ? '' : ` ${SHARED}${copy}`}`, message: e.message };
  });
  const localIds = new Set(local.map((e) => e.message.platformMessageId));
  const theirs = shared
    .filter((e) => !localIds.has(e.message.platformMessageId))
    .map((e) => ({ id: `${SHARED}${e.id}`, message: e.message }));
  const merged: SpoolEntry[] = [];
  let i = 0;
  let j = 0;
  while (i < mine.length || j < theirs.length) {
    const a = mine[i];
    const b = theirs[j];
    if (a !== undefined && (b === undefined || a.message.ts <= b.message.ts)) {
      merged.push(a);
      i++;
    } else if (b !== undefined) {
      merged.push(b);
      j++;
    }
  }
  return merged;
}

function splitIds(ids: readonly string[]): { local: string[]; shared: string[] } {
  const parts = ids.flatMap((id) => id.split(' '));
  const of = (tag: string) => parts.filter((p) => p.startsWith(tag)).map((p) => p.slice(tag.length));
  return { local: of(LOCAL), shared: of(SHARED) };
}
