/**
 * The inbound spool on Redis: one stream per channel (`<p>:spool:<ch>`, entries in arrival order,
 * the message as JSON in field `m`) and a set of the channels that have one. It lives on the
 * producer connection, which fails fast: with Redis down too, `push` throws and the caller says so
 * (the message cannot be kept). Survives a bot restart; any replica may replay it.
 */
import type { InboundSpool, SpooledMessage } from '@ebb/core';
import type { Redis } from 'ioredis';
import { assertRedisReady } from './redis-connection.js';
import { type RedisKeys, redisKeys } from './redis-keys.js';

export class RedisInboundSpool implements InboundSpool {
  readonly #redis: Redis;
  readonly #keys: RedisKeys;

  constructor(options: { readonly connection: Redis; readonly prefix?: string }) {
    this.#redis = options.connection;
    this.#keys = redisKeys(options.prefix);
  }

  async push(message: SpooledMessage): Promise<void> {
    assertRedisReady(this.#redis, `spool a message of ${message.channelKey}`);
    await this.#redis
      .multi()
      .xadd(this.#keys.spool(message.channelKey), '*', 'm', JSON.stringify(message))
      .sadd(this.#keys.spoolChannels, message.channelKey)
      .exec();
  }

  async peek(channelKey: string, limit: number) {
    assertRedisReady(this.#redis, `read the spool of ${channelKey}`);
    const entries = await this.#redis.xrange(
      this.#keys.spool(channelKey),
      '-',
      '+',
      'COUNT',
      Math.max(1, limit),
    );
    return entries.map(([id, fields]) => ({ id, message: JSON.parse(fields[1] ?? '{}') as SpooledMessage }));
  }

  async remove(channelKey: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const key = this.#keys.spool(channelKey);
    await this.#redis.xdel(key, ...ids);
    // Forget the channel once its stream is empty (a push after this re-adds it).
    if ((await this.#redis.xlen(key)) === 0) await this.#redis.srem(this.#keys.spoolChannels, channelKey);
  }

  async channels(): Promise<readonly string[]> {
    assertRedisReady(this.#redis, 'list the spooled channels');
    return this.#redis.smembers(this.#keys.spoolChannels);
  }
}
