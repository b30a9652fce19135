/**
 * `ChannelLeases` on Redis: one turn at a time per channel across replicas, first come, first
 * served, fenced. Every step is one Lua script, so each decision (who is next, which fence) is made
 * atomically inside Redis, on the producer connection, which fails fast: with Redis away, `acquire`
 * throws (also while it waits) and the caller falls back to its own channel actor.
 *
 * - **The lease** is `<p>:channel-lease:<ch>` = `<token>:<fence>`, `PX ttl`, renewed every third of
 *   the TTL by compare-and-PEXPIRE (as `RedisAnswerClaims` does), released by compare-and-delete. A
 *   holder that died (SIGKILL) frees the channel within `ttlMs`.
 * - **The fence** is `max(last fence + 1, Redis TIME in µs)`, the last kept in
 *   `<p>:channel-fence:<ch>`: it grows across acquisitions and also past a Redis restarted empty (CI
 *   runs it without persistence), as long as Redis's clock does not step back by more than it has
 *   run since. About 1.8e15, exact in a Lua double and a JS number (2^53 ≈ 9e15). The fence key
 *   expires a day after the last acquisition: by then the clock alone is ahead of it.
 * - **The queue** is a sorted set of waiting tokens by ticket (the tail's + 1, so no counter key to
 *   lose), beside a second one of the Redis time each entry is dropped at unless its waiter
 *   refreshes it. A free lease goes to the head waiter only, or to anyone when nobody waits. A waiter
 *   that died blocks the queue for at most one TTL: the acquire script prunes entries past their
 *   time, and both keys expire with their last waiter.
 * - **Waking** is event-driven: a release (and a head waiter leaving with others behind it)
 *   publishes the channel key on `<p>:channel-lease-released`, and one subscriber connection per
 *   instance wakes that channel's waiters. A dead holder publishes nothing, so a waiter also sleeps
 *   at most until the holder's PTTL (or the dead head waiter's drop time), and at most a third of the
 *   TTL, when it must refresh its place anyway; that refresh asks again, which also covers a release
 *   message lost while the subscriber reconnected.
 *
 * `lost` is the holder's early word that its lease may have passed on; the fence, checked by the
 * archive's append, is what stops a stalled ex-holder from writing.
 */
import { randomUUID } from 'node:crypto';
import {
  type ChannelLease,
  type ChannelLeaseLoss,
  ChannelLeaseLostError,
  type ChannelLeases,
  EbbError,
  type Logger,
  SILENT_LOGGER,
  settleWithin,
} from '@ebb/core';
import type { Redis } from 'ioredis';
import {
  ACQUIRE,
  type AcquireOutcome,
  LEAVE,
  parseAcquireReply,
  RELEASE,
  RENEW,
  renewalLoss,
} from './redis-channel-lease-scripts.js';
import {
  assertRedisReady,
  closeRedis,
  createRedis,
  PRODUCER_TIMEOUTS,
  RedisUnavailableError,
} from './redis-connection.js';
import { type RedisKeys, redisKeys } from './redis-keys.js';

export interface RedisChannelLeasesOptions {
  /** A `producer` connection; the caller closes it. */
  readonly connection: Redis;
  /**
   * A `subscriber` connection (the caller closes it). It may be shared with `RedisContextNotifier`:
   * each listens only to its own channel.
   */
  readonly subscriber: Redis;
  /** Key prefix (default `ebb`). */
  readonly prefix?: string;
  /** How long a lease outlives a holder that stopped renewing it, and a queued waiter its last refresh. */
  readonly ttlMs?: number;
}

/**
 * A holder or waiter that died (SIGKILL) blocks its channel this long at most. At most
 * `DEFAULT_ANSWER_CLAIM_TTL_MS` (5 s), and both start running out at the kill, so the lease never
 * makes a retry after a SIGKILL wait longer than the dead turn's claim does, and leaves 2 s of the
 * 5 s for the retry's own turn to start. Renewed every third of it (1 s), a lease survives an
 * event-loop stall of 2 s, twice the longest measured in the bot (under a second, BENCHMARKS.md
 * "Retention").
 */
export const DEFAULT_CHANNEL_LEASE_TTL_MS = 3_000;

/** How long the last fence is kept after an acquisition; past it the clock alone is ahead (see the header). */
const FENCE_TTL_MS = 86_400_000;

/**
 * How long a waiter sleeps unless a release wakes it: just past the holder's expiry (a dead holder
 * publishes nothing), and at most a third of the TTL, when it must refresh its place in the queue.
 */
export function nextTryInMs(outcome: { readonly expiresInMs: number }, ttlMs: number): number {
  const refresh = Math.max(1, Math.floor(ttlMs / 3));
  return outcome.expiresInMs < 0 ? refresh : Math.min(refresh, outcome.expiresInMs + 1);
}

interface LeaseKeys {
  readonly channelKey: string;
  readonly lease: string;
  readonly fence: string;
  readonly queue: string;
  readonly deadlines: string;
}

/** One `acquire` waiting: woken by a release message of its channel, a timer, or an abort. */
class Waiter {
  /** A release message came since the last ask: ask again at once. */
  woken = false;
  #resume: (() => void) | undefined;

  wake(): void {
    this.woken = true;
    this.#resume?.();
  }

  sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const settle = (finish: () => void) => () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#resume = undefined;
        finish();
      };
      const onAbort = settle(() => reject(signal?.reason));
      const timer = setTimeout(settle(resolve), ms);
      this.#resume = settle(resolve);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

export class RedisChannelLeases implements ChannelLeases {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #keys: RedisKeys;
  readonly #ttlMs: number;
  /** The waiters of this instance by channel: as many as `acquire`s in flight, so bounded by them. */
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #onMessage = (redisChannel: string, channelKey: string) => {
    if (redisChannel !== this.#keys.channelLeaseReleased) return;
    for (const waiter of this.#waiters.get(channelKey) ?? []) waiter.wake();
  };
  #subscription: Promise<void> | undefined;
  #listening = false;
  #closed = false;
  #owned = false;

  constructor(options: RedisChannelLeasesOptions) {
    this.#redis = options.connection;
    this.#subscriber = options.subscriber;
    this.#keys = redisKeys(options.prefix);
    this.#ttlMs = options.ttlMs ?? DEFAULT_CHANNEL_LEASE_TTL_MS;
    this.#subscriber.on('message', this.#onMessage);
  }

  /** Leases with their own two connections, closed by `close()`. */
  static connect(
    url: string,
    options: { readonly prefix?: string; readonly ttlMs?: number; readonly logger?: Logger } = {},
  ): RedisChannelLeases {
    const logger = options.logger ?? SILENT_LOGGER;
    const leases = new RedisChannelLeases({
      connection: createRedis(url, { role: 'producer', logger, connectionName: 'ebb-leases' }),
      subscriber: createRedis(url, { role: 'subscriber', logger, connectionName: 'ebb-leases-sub' }),
      ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
      ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
    });
    leases.#owned = true;
    return leases;
  }

  async acquire(channelKey: string, signal?: AbortSignal): Promise<ChannelLease> {
    signal?.throwIfAborted();
    if (this.#closed)
      throw new RedisUnavailableError(`channel leases are closed; could not acquire ${channelKey}`);
    const keys = this.#leaseKeys(channelKey);
    const token = randomUUID();
    const waiter = new Waiter();
    const waiters = this.#waiters.get(channelKey) ?? new Set();
    this.#waiters.set(channelKey, waiters.add(waiter));
    // A release heard only once subscribed: if it was not yet, the first ask is made again after.
    const listening = this.#listen();
    try {
      for (let asked = 0; ; asked++) {
        if (asked > 0) signal?.throwIfAborted();
        waiter.woken = false;
        const sentAt = performance.now();
        const outcome = await this.#ask(keys, token);
        if (outcome.kind === 'acquired') {
          const lease = this.#hold(keys, `${token}:${outcome.fence}`, outcome.fence, sentAt);
          if (!signal?.aborted) return lease;
          await lease.release();
          throw signal.reason;
        }
        if (asked === 0 && !listening) {
          await settleWithin(this.#subscription ?? Promise.resolve(), PRODUCER_TIMEOUTS.connectTimeoutMs);
        } else if (!waiter.woken) {
          await waiter.sleep(nextTryInMs(outcome, this.#ttlMs), signal);
        }
      }
    } catch (err) {
      // Best effort: a waiter that cannot leave (Redis away) is dropped within the TTL.
      await this.#redis
        .eval(
          LEAVE,
          3,
          keys.queue,
          keys.deadlines,
          keys.lease,
          token,
          channelKey,
          this.#keys.channelLeaseReleased,
        )
        .catch(() => {});
      throw err;
    } finally {
      waiters.delete(waiter);
      if (waiters.size === 0 && this.#waiters.get(channelKey) === waiters) this.#waiters.delete(channelKey);
    }
  }

  /**
   * Ends every wait (those `acquire`s throw `RedisUnavailableError`) and stops listening; closes the
   * connections when `connect` opened them. Leases held stay held until released.
   */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiters of this.#waiters.values()) for (const waiter of waiters) waiter.wake();
    this.#subscriber.off('message', this.#onMessage);
    const subscribed = this.#subscription !== undefined;
    this.#subscription = undefined;
    this.#listening = false;
    if (this.#owned) await Promise.all([closeRedis(this.#redis), closeRedis(this.#subscriber)]);
    else if (subscribed) await this.#subscriber.unsubscribe(this.#keys.channelLeaseReleased).catch(() => {});
  }

  /** Whether release messages are heard already; starts subscribing (once) if not. */
  #listen(): boolean {
    this.#subscription ??= this.#subscriber.subscribe(this.#keys.channelLeaseReleased).then(
      () => {
        this.#listening = true;
      },
      () => {
        // Tried again by the next acquire; waiters meanwhile wake on their timers.
        this.#subscription = undefined;
      },
    );
    return this.#listening;
  }

  async #ask(keys: LeaseKeys, token: string): Promise<AcquireOutcome> {
    const doing = `acquire the lease of ${keys.channelKey}`;
    if (this.#closed) throw new RedisUnavailableError(`channel leases are closed; could not ${doing}`);
    assertRedisReady(this.#redis, doing);
    let reply: unknown;
    try {
      reply = await this.#redis.eval(
        ACQUIRE,
        4,
        keys.lease,
        keys.fence,
        keys.queue,
        keys.deadlines,
        token,
        this.#ttlMs,
        FENCE_TTL_MS,
      );
    } catch (err) {
      if (err instanceof EbbError) throw err;
      throw new RedisUnavailableError(`Redis did not answer; could not ${doing}`, err);
    }
    return parseAcquireReply(reply);
  }

  /**
   * The lease, renewed every third of the TTL. `lost` aborts when a renewal finds it gone or taken,
   * or when none was confirmed for a TTL after the last one sent that was (by then Redis expired it).
   */
  #hold(keys: LeaseKeys, value: string, fence: number, confirmedAt: number): ChannelLease {
    const ttlMs = this.#ttlMs;
    const lost = new AbortController();
    let validUntil = confirmedAt + ttlMs;
    let released = false;
    let expiry: NodeJS.Timeout | undefined;
    const stop = () => {
      clearInterval(renewal);
      clearTimeout(expiry);
    };
    const lose = (loss: ChannelLeaseLoss) => {
      if (released || lost.signal.aborted) return;
      stop();
      lost.abort(new ChannelLeaseLostError(keys.channelKey, loss));
    };
    const armExpiry = () => {
      clearTimeout(expiry);
      expiry = setTimeout(() => lose('unconfirmed'), Math.max(0, validUntil - performance.now()));
      expiry.unref();
    };
    const renewal = setInterval(
      () => {
        const sentAt = performance.now();
        this.#redis.eval(RENEW, 1, keys.lease, value, ttlMs).then(
          (reply) => {
            const loss = renewalLoss(reply);
            if (loss !== undefined) {
              lose(loss);
            } else if (!released && !lost.signal.aborted) {
              validUntil = Math.max(validUntil, sentAt + ttlMs);
              armExpiry();
            }
          },
          // Tried again on the next tick; `expiry` fires if none is confirmed in time.
          () => {},
        );
      },
      Math.max(1, Math.floor(ttlMs / 3)),
    );
    renewal.unref();
    armExpiry();
    return {
      fence,
      lost: lost.signal,
      release: async () => {
        if (released) return;
        released = true;
        stop();
        // Also after `lost` (it may still be ours). A failed release is harmless: the lease expires.
        await this.#redis
          .eval(RELEASE, 2, keys.lease, keys.queue, value, keys.channelKey, this.#keys.channelLeaseReleased)
          .catch(() => {});
      },
    };
  }

  #leaseKeys(channelKey: string): LeaseKeys {
    return {
      channelKey,
      lease: this.#keys.channelLease(channelKey),
      fence: this.#keys.channelFence(channelKey),
      queue: this.#keys.channelLeaseQueue(channelKey),
      deadlines: this.#keys.channelLeaseDeadlines(channelKey),
    };
  }
}
