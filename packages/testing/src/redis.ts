/**
 * Redis fixtures for integration tests: the real Redis from `REDIS_URL` (default 127.0.0.1), a
 * fresh key prefix per test so tests never see each other's keys or jobs, and a cleanup that
 * deletes everything under a prefix.
 */
import { randomBytes } from 'node:crypto';
import { createRedis, redisKeys, waitForReady } from '@ebb/queue';
import type { Redis } from 'ioredis';

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A unique key prefix (also the BullMQ prefix), e.g. `ebbtest-3f9a0c1d2b4e`. */
export function randomPrefix(): string {
  return `ebbtest-${randomBytes(6).toString('hex')}`;
}

/** Deletes every key under `prefix` (SCAN + UNLINK, never KEYS); returns how many went. */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', redisKeys(prefix).everything, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** `cleanupPrefix` on a connection of its own: for a test's last step, when its own are closed. */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = createRedis(redisUrl(), { role: 'producer' });
  try {
    await waitForReady(redis);
    await cleanupPrefix(redis, prefix);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
