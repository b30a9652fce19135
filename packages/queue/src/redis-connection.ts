/**
 * Redis connections, one factory for the three ways Ebb uses Redis:
 *
 * - `producer` (the bot: enqueueing jobs, publishing context changes, locks). Fails fast when Redis
 *   is down, so the bot falls back (it keeps answering; emergency truncation needs no Redis) instead
 *   of hanging a turn: no offline queue (a command while disconnected rejects at once), a short
 *   connect timeout, a command timeout for half-open sockets, one retry per request. "Bounded" is
 *   each wait, not the number of reconnects: it keeps reconnecting at most every 2 s, so the bot
 *   recovers by itself when Redis comes back. `assertRedisReady` turns "not connected" into
 *   `RedisUnavailableError` before BullMQ gets a chance to wait for a connection.
 * - `worker` (BullMQ `Worker`): `maxRetriesPerRequest: null` as BullMQ requires for its blocking
 *   commands, offline queue on, reconnect forever (up to 10 s apart).
 * - `subscriber` (pub/sub): a dedicated connection, resubscribes after a reconnect, reconnects forever.
 */
import { backoffDelayMs, type Logger, SILENT_LOGGER, settleWithin } from '@ebb/core';
import { Redis, type RedisOptions } from 'ioredis';
import { QueueError } from './errors.js';

export type RedisRole = 'producer' | 'worker' | 'subscriber';

export interface CreateRedisOptions {
  readonly role: RedisRole;
  readonly logger?: Logger;
  /** CLIENT SETNAME, for `CLIENT LIST`; defaults to `ebb-<role>`. */
  readonly connectionName?: string;
}

/** Redis is not connected (or answered too slowly); trying again later can help. */
export class RedisUnavailableError extends QueueError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'redis_unavailable', retryable: true, cause });
  }
}

export const PRODUCER_TIMEOUTS = {
  connectTimeoutMs: 2_000,
  commandTimeoutMs: 5_000,
  maxReconnectDelayMs: 2_000,
} as const;

/** ioredis options we set (`replyMapping` left out: under exactOptionalPropertyTypes it breaks `new Redis`). */
export type RedisRoleOptions = Omit<RedisOptions, 'replyMapping'>;

/** ioredis options per role (exported so tests and the composition root can see what a role means). */
export function redisOptionsFor(role: RedisRole): RedisRoleOptions {
  switch (role) {
    case 'producer':
      return {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: PRODUCER_TIMEOUTS.connectTimeoutMs,
        commandTimeout: PRODUCER_TIMEOUTS.commandTimeoutMs,
        // 200 ms, 400 ms, ... up to the cap: `times` counts reconnects from 1.
        retryStrategy: (times) =>
          backoffDelayMs({ initialDelayMs: 200, maxDelayMs: PRODUCER_TIMEOUTS.maxReconnectDelayMs }, times),
      };
    case 'worker':
      return {
        maxRetriesPerRequest: null,
        enableOfflineQueue: true,
        retryStrategy: (times) => Math.min(500 * times, 10_000),
      };
    case 'subscriber':
      return {
        maxRetriesPerRequest: null,
        enableOfflineQueue: true,
        autoResubscribe: true,
        retryStrategy: (times) => Math.min(500 * times, 5_000),
      };
  }
}

/**
 * A connection for `role`. Connection errors are logged once per outage (warn) and the recovery
 * once (info); ioredis keeps reconnecting as the role's retry strategy says.
 */
export function createRedis(url: string, options: CreateRedisOptions): Redis {
  const log = options.logger ?? SILENT_LOGGER;
  const target = describeRedisUrl(url);
  const redis = new Redis(url, {
    ...redisOptionsFor(options.role),
    connectionName: options.connectionName ?? `ebb-${options.role}`,
  });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    log.warn(
      { event: 'redis.connection_failed', err, redis: target, role: options.role },
      'redis connection error',
    );
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ event: 'redis.reconnected', redis: target, role: options.role }, 'redis reconnected');
  });
  return redis;
}

/** Throws `RedisUnavailableError` unless the connection is ready: the producer's fail-fast check. */
export function assertRedisReady(redis: Redis, doing: string): void {
  if (redis.status === 'ready') return;
  const { host, port } = redis.options;
  throw new RedisUnavailableError(
    `Redis at ${host ?? '?'}:${port ?? '?'} is not reachable (connection ${redis.status}); could not ${doing}`,
  );
}

/** Resolves when the connection is ready; `RedisUnavailableError` after `timeoutMs` or when it ends. */
export async function waitForReady(redis: Redis, timeoutMs?: number): Promise<void> {
  if (redis.status === 'ready') return;
  let timer: NodeJS.Timeout | undefined;
  let onReady = () => {};
  let onEnd = () => {};
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = () => {
        try {
          assertRedisReady(redis, 'connect');
          resolve();
        } catch (err) {
          reject(err);
        }
      };
      onReady = () => resolve();
      onEnd = fail;
      redis.once('ready', onReady);
      redis.once('end', onEnd);
      timer = setTimeout(fail, timeoutMs ?? PRODUCER_TIMEOUTS.connectTimeoutMs);
    });
  } finally {
    clearTimeout(timer);
    redis.off('ready', onReady);
    redis.off('end', onEnd);
  }
}

/** How long a QUIT may wait for Redis's answer before the connection is dropped instead. */
export const QUIT_WAIT_MS = 2_000;

/**
 * Closes a connection: QUIT when it is connected (so the replies in flight are read first), else it
 * is dropped. A QUIT sent while Redis is away waits in the offline queue behind what is queued there
 * for as long as Redis stays away, and the connection goes on reconnecting meanwhile; one sent into a
 * network partition (connected, nothing answered) waits as long, on a connection with no command
 * timeout. A process stopping then would never exit: past `QUIT_WAIT_MS` the connection is dropped.
 */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    try {
      if ((await settleWithin(redis.quit(), QUIT_WAIT_MS)).done) return;
    } catch {
      // Dropped below.
    }
  }
  redis.disconnect();
}

/**
 * Whether a Redis answers PING at `url` within `timeoutMs`: the embedded-mode decision at startup
 * (no Redis → jobs run in-process). Never throws, never retries, leaves no connection behind.
 */
export async function isRedisReachable(url: string, timeoutMs = 1_000): Promise<boolean> {
  let client: Redis | undefined;
  try {
    client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
    });
    client.on('error', () => {});
    const connected = client;
    const ping = await settleWithin(
      connected.connect().then(() => connected.ping()),
      timeoutMs,
    );
    return ping.done && ping.value === 'PONG';
  } catch {
    return false;
  } finally {
    client?.disconnect();
  }
}

/** `host:port/db` of a Redis URL, without credentials, for logs and error messages. */
export function describeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '6379'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
  } catch {
    return '(invalid redis url)';
  }
}
