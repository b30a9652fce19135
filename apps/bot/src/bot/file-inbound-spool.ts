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
 * `FallbackInboundSpool` puts Redis, the copy every replica can see, in front of the file, by one
 * rule: the disk first, one order per channel across both stores, and a store that cannot be read is
 * "unknown", never "empty" (the rule in full, and what it cannot order, is at its top).
 *
 * The parts:
 *
 *   the spool file        this file (`FileInboundSpool`: its queue of changes, appends, removals, scrubs)
 *   its records           `spool-records.ts`  (encoding, reading back, scanning for a scrub; pure)
 *   durable writes        `durable-files.ts`  (replace whole, sync the directory, append a dead letter)
 *   Redis with the file   `fallback-inbound-spool.ts` (`FallbackInboundSpool`)
 *   two stores as one     `merge-spool-entries.ts` (one order, ids tagged by store; pure)
 */
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { InboundSpool, SpoolEntry, SpooledItem } from '@ebb/core';
import { holdsTextOf } from '@ebb/queue';
import { appendLine, readIfAny, replaceFile, syncDirectory } from './durable-files.js';
import {
  type DeadLetter,
  encodeLine,
  entriesOf,
  type Line,
  type Pending,
  pendingText,
  readPending,
  scanDeadLetters,
  scanSpoolFile,
  wholeLines,
} from './spool-records.js';

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
      const record: DeadLetter = {
        deadLettered: new Date().toISOString(),
        reason,
        id: entry.id,
        message: entry.message,
      };
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
        const text = pendingText(pending);
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
    const data = `${this.#torn ? '\n' : ''}${encodeLine(line)}`;
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
    // No file (or no directory to hold one): nothing pending.
    const bytes = await readIfAny(this.#path);
    // A last line without its newline is a write that never finished (so never acknowledged).
    const { lines, end, unfinished } = wholeLines(bytes);
    this.#size = bytes.length;
    if (unfinished) {
      this.#torn = await truncate(this.#path, end).then(
        () => false,
        () => true,
      );
      if (!this.#torn) this.#size = end;
    }
    const { pending, lastId } = readPending(lines);
    this.#lastId = Math.max(this.#lastId, lastId);
    return pending;
  }
}
