/**
 * `AnswerClaims` on Redis: the claim on a message is `SET <p>:answer-claim:<ch>:<id> <token> NX PX
 * ttl`, kept alive every third of the TTL while its turn runs (compare-and-PEXPIRE) and released by
 * compare-and-delete, so a holder never extends or frees a claim that expired and went to someone
 * else. A holder that died (SIGKILL) frees the message within `ttlMs`. Unlike `withLock`, which is
 * held around a few commands, a claim is held for a whole turn (model calls, tools), hence the
 * renewal. On the producer connection, which fails fast: with Redis away, `claim` throws.
 */
import { randomUUID } from 'node:crypto';
import type { AnswerClaim, AnswerClaims } from '@ebb/core';
import type { Redis } from 'ioredis';
import { assertRedisReady } from './redis-connection.js';
import { type RedisKeys, redisKeys } from './redis-keys.js';

export interface RedisAnswerClaimsOptions {
  /** A `producer` connection; the caller closes it. */
  readonly connection: Redis;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  /** How long a claim outlives a holder that stopped renewing it (died). */
  readonly ttlMs?: number;
}

/**
 * A retry after a replica died waits this long at most for the dead holder's claim. Renewed every
 * third of it, a claim survives an event-loop stall of about two thirds (3.3 s: the longest stalls
 * measured in the bot were under a second, BENCHMARKS.md "Retention"); 15 s kept a client waiting
 * 15.3 s after a SIGKILL, with no way to tell why.
 */
export const DEFAULT_ANSWER_CLAIM_TTL_MS = 5_000;

/** KEYS: the claim; ARGV: the holder's token. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
/** KEYS: the claim; ARGV: the holder's token, the TTL in ms. */
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

export class RedisAnswerClaims implements AnswerClaims {
  readonly #redis: Redis;
  readonly #keys: RedisKeys;
  readonly #ttlMs: number;

  constructor(options: RedisAnswerClaimsOptions) {
    this.#redis = options.connection;
    this.#keys = redisKeys(options.prefix);
    this.#ttlMs = options.ttlMs ?? DEFAULT_ANSWER_CLAIM_TTL_MS;
  }

  async claim(channelKey: string, platformMessageId: string): Promise<AnswerClaim | undefined> {
    assertRedisReady(this.#redis, `claim the answer to a message of ${channelKey}`);
    const key = this.#keys.answerClaim(channelKey, platformMessageId);
    const token = randomUUID();
    if ((await this.#redis.set(key, token, 'PX', this.#ttlMs, 'NX')) !== 'OK') return undefined;
    // A failed renewal is tried again on the next tick; a claim lost meanwhile stays lost (RENEW checks the token).
    const renewal = setInterval(
      () => void this.#redis.eval(RENEW, 1, key, token, this.#ttlMs).catch(() => {}),
      Math.max(1, Math.floor(this.#ttlMs / 3)),
    );
    renewal.unref();
    return {
      release: async () => {
        clearInterval(renewal);
        // A failed release is harmless: the claim expires after the TTL.
        await this.#redis.eval(RELEASE, 1, key, token).catch(() => {});
      },
    };
  }
}
