/**
 * The last-resort inbound spool: an append-only JSON Lines file on local disk, for when Postgres
 * and Redis are both away. Each push appends `{"id":…,"message":…}`; each remove appends
 * `{"removed":[…]}`; reading replays the file. Once nothing is left in it, the file is emptied, so it
 * only ever holds one outage. One process writes it (each bot replica has its own, under its own
 * `EBB_DATA_DIR`); an append is one `write` of one line, so a crash loses at most the line being
 * written.
 */
import { appendFile, mkdir, readFile, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { InboundSpool, SpooledMessage } from '@ebb/core';

type Line =
  | { readonly id: string; readonly message: SpooledMessage }
  | { readonly removed: readonly string[] };

export class FileInboundSpool implements InboundSpool {
  readonly #path: string;
  #next = Date.now();
  /** Appends in order, one at a time. */
  #writing: Promise<unknown> = Promise.resolve();

  constructor(path: string) {
    this.#path = path;
  }

  push(message: SpooledMessage): Promise<void> {
    return this.#append({ id: `f${++this.#next}`, message });
  }

  async peek(channelKey: string, limit: number) {
    return (await this.#pending())
      .filter((e) => e.message.channelKey === channelKey)
      .slice(0, Math.max(0, limit));
  }

  async remove(_channelKey: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.#append({ removed: ids });
    if ((await this.#pending()).length === 0) {
      this.#writing = this.#writing.then(() => truncate(this.#path, 0).catch(() => {}));
      await this.#writing;
    }
  }

  async channels(): Promise<readonly string[]> {
    return [...new Set((await this.#pending()).map((e) => e.message.channelKey))];
  }

  #append(line: Line): Promise<void> {
    const write = this.#writing.then(async () => {
      await mkdir(dirname(this.#path), { recursive: true });
      await appendFile(this.#path, `${JSON.stringify(line)}\n`);
    });
    this.#writing = write.catch(() => {});
    return write;
  }

  /** The entries pushed and not removed, oldest first (a torn last line is skipped). */
  async #pending(): Promise<{ id: string; message: SpooledMessage }[]> {
    await this.#writing;
    let text: string;
    try {
      text = await readFile(this.#path, 'utf8');
    } catch {
      return [];
    }
    const entries = new Map<string, SpooledMessage>();
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      let line: Line;
      try {
        line = JSON.parse(raw) as Line;
      } catch {
        continue;
      }
      if ('removed' in line) for (const id of line.removed) entries.delete(id);
      else entries.set(line.id, line.message);
    }
    return [...entries].map(([id, message]) => ({ id, message }));
  }
}

/**
 * Redis first, the local file when Redis cannot take a message. Reading merges both, oldest first by
 * the message's time, so a channel replays in the order its messages were sent whichever store
 * kept them.
 */
export class FallbackInboundSpool implements InboundSpool {
  readonly #primary: InboundSpool;
  readonly #local: InboundSpool;

  constructor(primary: InboundSpool, local: InboundSpool) {
    this.#primary = primary;
    this.#local = local;
  }

  async push(message: SpooledMessage): Promise<void> {
    try {
      await this.#primary.push(message);
    } catch {
      await this.#local.push(message);
    }
  }

  async peek(channelKey: string, limit: number) {
    const [primary, local] = await Promise.all([
      this.#primary.peek(channelKey, limit).catch(() => []),
      this.#local.peek(channelKey, limit),
    ]);
    return [
      ...primary.map((e) => ({ ...e, id: `r:${e.id}` })),
      ...local.map((e) => ({ ...e, id: `l:${e.id}` })),
    ]
      .sort((a, b) => (a.message.ts < b.message.ts ? -1 : a.message.ts > b.message.ts ? 1 : 0))
      .slice(0, Math.max(0, limit));
  }

  async remove(channelKey: string, ids: readonly string[]): Promise<void> {
    const of = (tag: string) => ids.filter((id) => id.startsWith(tag)).map((id) => id.slice(2));
    await this.#primary.remove(channelKey, of('r:'));
    await this.#local.remove(channelKey, of('l:'));
  }

  async channels(): Promise<readonly string[]> {
    const [primary, local] = await Promise.all([
      this.#primary.channels().catch(() => []),
      this.#local.channels(),
    ]);
    return [...new Set([...primary, ...local])];
  }
}
