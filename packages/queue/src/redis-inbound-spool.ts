/**
 * The inbound spool on Redis: one stream per channel (`<p>:spool:<ch>`, entries in arrival order,
 * the message as JSON in field `m`), a set of the channels that have one, and a stream of dead
 * letters (`<p>:spool-dead`: entries the archive refused for good, kept for an operator). It lives
 * on the producer connection, which fails fast: with Redis down, every call throws (a read error is
 * "unknown", for the caller to try later, never "nothing spooled"). Survives a bot restart; any
 * replica may replay it. Every change is one atomic step (MULTI or a script), so a push can never
 * land between a removal emptying a stream and that removal dropping the channel from the set.
 *
 * A take-back (`scrub`) cannot just `XDEL`: a stream keeps a deleted entry's bytes in its node until
 * every entry of that node is gone (a `DUMP` or an RDB snapshot still holds the text). So a scrubbed
 * stream is written anew, its entries kept with their ids, whenever it loses an entry there or lost
 * one before (a replayed entry the removal `XDEL`ed).
 */
import {
  type InboundSpool,
  isSpooledChange,
  isThreadKeyOf,
  type SpoolEntry,
  type SpooledItem,
} from '@ebb/core';
import type { Redis } from 'ioredis';
import { assertRedisReady } from './redis-connection.js';
import { type RedisKeys, redisKeys } from './redis-keys.js';

/** Drops an emptied stream and its channel from the set (KEYS: stream, set; ARGV[1]: the channel). */
const FORGET_IF_EMPTY = `
if redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[1])
end`;

/** KEYS: stream, channel set; ARGV: channel, ids… */
const REMOVE = `redis.call('XDEL', KEYS[1], unpack(ARGV, 2))${FORGET_IF_EMPTY}`;

/** KEYS: stream, channel set, dead letters; ARGV: channel, id, reason, message JSON, time. */
const DEAD_LETTER = `
redis.call('XADD', KEYS[3], '*', 'channel', ARGV[1], 'id', ARGV[2], 'reason', ARGV[3], 'm', ARGV[4], 'at', ARGV[5])
redis.call('XDEL', KEYS[1], ARGV[2])${FORGET_IF_EMPTY}`;

/**
 * Writes stream KEYS[1] anew without the entries ARGV[2..] (ARGV[1]: the channel, for what follows),
 * when it holds one of them or ever lost an entry (`entries-added` above its length: the lost entry's
 * bytes are still in it); the rest keep their ids, and the stream its last id, so a replay's ids stay
 * good and new ones still grow. Sets `dropped`. Reads the whole stream: it holds one outage at most.
 */
const REWRITE_WITHOUT = `
local drop = {}
for i = 2, #ARGV do drop[ARGV[i]] = true end
local dropped = 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  local about = {}
  for i = 1, #info, 2 do about[info[i]] = info[i + 1] end
  local entries = redis.call('XRANGE', KEYS[1], '-', '+')
  local kept = {}
  for _, entry in ipairs(entries) do
    if drop[entry[1]] then dropped = dropped + 1 else kept[#kept + 1] = entry end
  end
  if dropped > 0 or about['entries-added'] ~= #entries then
    redis.call('DEL', KEYS[1])
    for _, entry in ipairs(kept) do redis.call('XADD', KEYS[1], entry[1], unpack(entry[2])) end
    if #kept > 0 then redis.call('XSETID', KEYS[1], about['last-generated-id']) end
  end
end`;

/** A channel's stream (KEYS: stream, channel set; ARGV: channel, ids…); returns how many went. */
const SCRUB_CHANNEL = `${REWRITE_WITHOUT}${FORGET_IF_EMPTY}
return dropped`;

/** The dead letters (KEYS: the stream; ARGV: unused, ids…); returns how many went. */
const SCRUB_DEAD_LETTERS = `${REWRITE_WITHOUT}
return dropped`;

/** Entries read per `XRANGE` while looking for a take-back's messages. */
const SCRUB_PAGE = 500;

export class RedisInboundSpool implements InboundSpool {
  readonly #redis: Redis;
  readonly #keys: RedisKeys;

  constructor(options: { readonly connection: Redis; readonly prefix?: string }) {
    this.#redis = options.connection;
    this.#keys = redisKeys(options.prefix);
  }

  async push(message: SpooledItem): Promise<void> {
    assertRedisReady(this.#redis, `spool a message of ${message.channelKey}`);
    await this.#redis
      .multi()
      .xadd(this.#keys.spool(message.channelKey), '*', 'm', JSON.stringify(message))
      .sadd(this.#keys.spoolChannels, message.channelKey)
      .exec();
  }

  async peek(channelKey: string, limit: number): Promise<SpoolEntry[]> {
    assertRedisReady(this.#redis, `read the spool of ${channelKey}`);
    const entries = await this.#redis.xrange(
      this.#keys.spool(channelKey),
      '-',
      '+',
      'COUNT',
      Math.max(1, limit),
    );
    return entries.map(([id, fields]) => ({ id, message: JSON.parse(fields[1] ?? '{}') as SpooledItem }));
  }

  async remove(channelKey: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    assertRedisReady(this.#redis, `remove replayed messages of ${channelKey}`);
    await this.#redis.eval(
      REMOVE,
      2,
      this.#keys.spool(channelKey),
      this.#keys.spoolChannels,
      channelKey,
      ...ids,
    );
  }

  async channels(): Promise<readonly string[]> {
    assertRedisReady(this.#redis, 'list the spooled channels');
    return this.#redis.smembers(this.#keys.spoolChannels);
  }

  async deadLetter(channelKey: string, entry: SpoolEntry, reason: string): Promise<string> {
    assertRedisReady(this.#redis, `move a spooled message of ${channelKey} to the dead letters`);
    await this.#redis.eval(
      DEAD_LETTER,
      3,
      this.#keys.spool(channelKey),
      this.#keys.spoolChannels,
      this.#keys.spoolDeadLetters,
      channelKey,
      entry.id,
      reason,
      JSON.stringify(entry.message),
      new Date().toISOString(),
    );
    return this.#keys.spoolDeadLetters;
  }

  /**
   * Drops the messages' entries (and edits of them) from the channel's stream and the streams of the
   * channels it is a thread of, and their dead letters, each stream written anew (see the top). A
   * push landing meanwhile is kept; an entry `XDEL`ed before holds no record to count.
   */
  async scrub(channelKey: string, platformMessageIds: readonly string[]): Promise<number> {
    if (platformMessageIds.length === 0) return 0;
    assertRedisReady(this.#redis, `scrub taken-back messages of ${channelKey} from the spool`);
    const ids = new Set(platformMessageIds);
    const holds = (m: string | undefined) => holdsTextOf(parseItem(m), channelKey, ids);
    let dropped = 0;
    for (const key of spoolKeysHoldingTextOf(channelKey)) {
      const stream = this.#keys.spool(key);
      const found = await this.#entriesWhere(stream, (fields) => holds(fieldOf(fields, 'm')));
      dropped += Number(
        await this.#redis.eval(SCRUB_CHANNEL, 2, stream, this.#keys.spoolChannels, key, ...found),
      );
    }
    const dead = this.#keys.spoolDeadLetters;
    const found = await this.#entriesWhere(dead, (fields) => holds(fieldOf(fields, 'm')));
    dropped += Number(await this.#redis.eval(SCRUB_DEAD_LETTERS, 1, dead, '', ...found));
    return dropped;
  }

  /** The ids of the stream's entries whose fields pass `test`, a page at a time. */
  async #entriesWhere(stream: string, test: (fields: readonly string[]) => boolean): Promise<string[]> {
    const found: string[] = [];
    let start = '-';
    for (;;) {
      const page = await this.#redis.xrange(stream, start, '+', 'COUNT', SCRUB_PAGE);
      for (const [id, fields] of page) if (test(fields)) found.push(id);
      const last = page.at(-1);
      if (last === undefined || page.length < SCRUB_PAGE) return found;
      start = `(${last[0]}`;
    }
  }
}

/**
 * Whether a spooled item holds text of one of `channelKey`'s messages `ids`: the message itself, or
 * an edit of it (its text is the message's new text), under the message's key or, for an edit that
 * named no thread, under the key of the channel it is a thread of. A deletion holds no text. Both
 * spools scrub by it (the file spool imports it from here).
 */
export function holdsTextOf(
  item: SpooledItem | undefined,
  channelKey: string,
  ids: ReadonlySet<string>,
): boolean {
  if (item === undefined) return false;
  if (!isSpooledChange(item)) return item.channelKey === channelKey && ids.has(item.platformMessageId);
  const { change } = item;
  if (change.kind !== 'edited' || !ids.has(change.platformMessageId)) return false;
  return (
    item.channelKey === channelKey ||
    (change.threadUnknown === true && isThreadKeyOf(channelKey, item.channelKey))
  );
}

/**
 * The keys an item `holdsTextOf` the messages of `channelKey` may be spooled under: its own, then
 * those it is nested under (`slack:T:C:1.2` → `slack:T:C`, `slack:T`, `slack`).
 */
function spoolKeysHoldingTextOf(channelKey: string): string[] {
  const keys = [channelKey];
  for (let i = channelKey.lastIndexOf(':'); i > 0; i = channelKey.lastIndexOf(':', i - 1)) {
    keys.push(channelKey.slice(0, i));
  }
  return keys;
}

function fieldOf(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** A stored item, or undefined for a value that is not one (never ours to drop). */
function parseItem(json: string | undefined): SpooledItem | undefined {
  if (json === undefined) return undefined;
  try {
    const item: unknown = JSON.parse(json);
    const channelKey = (item as Partial<SpooledItem> | null)?.channelKey;
    return typeof channelKey === 'string' ? (item as SpooledItem) : undefined;
  } catch {
    return undefined;
  }
}
