/**
 * A short Redis lock, held only around a read-modify-write of a few commands: `SET key token NX PX`,
 * released by a compare-and-delete script so a holder never frees a lock that expired and went to
 * someone else. The TTL bounds how long a crashed holder blocks others; keep the work inside well
 * under it. Not a fencing lock: it serializes cooperating callers, it does not protect data.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { QueueError } from './errors.js';

export interface LockOptions {
  /** Lock lifetime in ms (PX). */
  readonly ttlMs: number;
  /** Give up (LockTimeoutError) when the lock is still taken after this many ms. */
  readonly waitMs: number;
  /** Pause between tries, ms (a little jitter is added). */
  readonly retryMs: number;
}

export const DEFAULT_LOCK_OPTIONS = {
  ttlMs: 5_000,
  waitMs: 3_000,
  retryMs: 10,
} as const satisfies LockOptions;

export class LockTimeoutError extends QueueError {
  constructor(key: string, waitMs: number) {
    super(`lock ${key} still taken after ${waitMs} ms`, { code: 'lock_timeout', retryable: true });
  }
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

export async function withLock<T>(
  redis: Redis,
  key: string,
  fn: () => Promise<T>,
  options: Partial<LockOptions> = {},
): Promise<T> {
  const { ttlMs, waitMs, retryMs } = { ...DEFAULT_LOCK_OPTIONS, ...options };
  const token = randomUUID();
  const deadline = Date.now() + waitMs;
  while ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') {
    if (Date.now() >= deadline) throw new LockTimeoutError(key, waitMs);
    await new Promise((resolve) => setTimeout(resolve, retryMs + Math.floor(Math.random() * retryMs)));
  }
  try {
    return await fn();
  } finally {
    // A failed release is harmless: the lock expires after ttlMs. Do not mask fn's outcome with it.
    await redis.eval(RELEASE, 1, key, token).catch(() => {});
  }
}
