/**
 * The inbound spool on Redis: one stream per channel (`<p>:spool:<ch>`, entries in arrival order,
 * the message as JSON in field `m`), a set of the channels that have one, and a stream of dead
 * letters (`<p>:spool-dead`: entries the archive refused for good, kept for an operator). It lives
 * on the producer connection, which fails fast: with Redis down, every call throws (a read error is
 * "unknown", for the caller to try later, never "nothing spooled"). Survives a bot restart; any
 * replica may replay it. Every change is one atomic step (MULTI or a script), so a push can never
 * land between a removal emptying a stream and that removal dropping the channel from the set.
 */
import type { InboundSpool, SpoolEntry, SpooledItem } from '@ebb/core';
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
}
