import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, waitForReady } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';
import { LockTimeoutError, withLock } from './with-lock.js';

describe('withLock', () => {
  const prefix = randomPrefix();
  const key = redisKeys(prefix).compactionEnqueueLock('slack:T1:C1');
  let a: Redis;
  let b: Redis;

  beforeAll(async () => {
    a = createRedis(redisUrl(), { role: 'producer' });
    b = createRedis(redisUrl(), { role: 'producer' });
    await Promise.all([waitForReady(a), waitForReady(b)]);
  });

  afterAll(async () => {
    await cleanupPrefix(a, prefix);
    await Promise.all([a.quit(), b.quit()]);
  });

  it('lets one holder at a time in, across connections', async () => {
    let inside = 0;
    let most = 0;
    const entered: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        withLock(i % 2 === 0 ? a : b, key, async () => {
          inside += 1;
          most = Math.max(most, inside);
          await (i % 2 === 0 ? a : b).ping();
          entered.push(i);
          inside -= 1;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(entered).toHaveLength(12);
    expect(await a.exists(key)).toBe(0);
  });

  it('releases the lock when the work throws', async () => {
    await expect(
      withLock(a, key, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await a.exists(key)).toBe(0);
  });

  it('gives up with a retryable LockTimeoutError while another holder keeps it', async () => {
    await a.set(key, 'someone-else', 'PX', 10_000);
    try {
      await expect(withLock(b, key, async () => 'never', { waitMs: 50 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      expect(await a.get(key)).toBe('someone-else');
    } finally {
      await a.del(key);
    }
  });

  it('never frees a lock that expired and went to someone else', async () => {
    await withLock(a, key, async () => {
      await a.set(key, 'next-holder', 'PX', 10_000);
    });
    expect(await a.get(key)).toBe('next-holder');
    await a.del(key);
  });
});
