/**
 * `RedisAnswerClaims` on the real Redis: one holder at a time, kept alive past its TTL while held,
 * never freed by a holder whose claim went to someone else, and refused loudly with Redis away.
 */
import { randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { RedisAnswerClaims } from './redis-answer-claims.js';
import { createRedis, RedisUnavailableError, waitForReady } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

const KEY = 'web:claims';
const redis = createRedis(redisUrl(), { role: 'producer' });
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});
afterAll(() => redis.quit());

async function claimsWith(ttlMs?: number) {
  await waitForReady(redis);
  const prefix = randomPrefix();
  closers.push(() => redis.del(redisKeys(prefix).answerClaim(KEY, 'm1')));
  return {
    key: redisKeys(prefix).answerClaim(KEY, 'm1'),
    claims: new RedisAnswerClaims({ connection: redis, prefix, ...(ttlMs ? { ttlMs } : {}) }),
  };
}

it('lets one holder at a time claim a message, and the next once it is released', async () => {
  const { claims } = await claimsWith();
  const first = await claims.claim(KEY, 'm1');
  expect(first).toBeDefined();
  expect(await claims.claim(KEY, 'm1')).toBeUndefined();
  expect(await claims.claim(KEY, 'm2')).toBeDefined();
  await first?.release();
  expect(await claims.claim(KEY, 'm1')).toBeDefined();
});

it('keeps a held claim alive past its TTL until it is released', async () => {
  const { claims, key } = await claimsWith(300);
  const held = await claims.claim(KEY, 'm1');
  // Renewed six times, every third of the TTL: twice the 300 ms a claim lives unrenewed.
  let renewals = 0;
  let last = await redis.pttl(key);
  await vi.waitFor(
    async () => {
      const now = await redis.pttl(key);
      if (now > last) renewals++;
      last = now;
      expect(renewals).toBeGreaterThanOrEqual(6);
    },
    { timeout: 5_000, interval: 20 },
  );
  expect(await claims.claim(KEY, 'm1')).toBeUndefined();
  await held?.release();
  expect(await redis.exists(key)).toBe(0);
});

it('never frees a claim that lapsed and went to another holder', async () => {
  const { claims, key } = await claimsWith();
  const lapsed = await claims.claim(KEY, 'm1');
  // Its TTL ran out (the holder was stalled) and another delivery's turn claimed the message.
  await redis.del(key);
  const current = await claims.claim(KEY, 'm1');
  expect(current).toBeDefined();
  await lapsed?.release();
  expect(await claims.claim(KEY, 'm1')).toBeUndefined();
  await current?.release();
});

it('throws when Redis is away, so the caller knows it cannot tell', async () => {
  const away = createRedis('redis://127.0.0.1:1', { role: 'producer' });
  closers.push(async () => away.disconnect());
  const claims = new RedisAnswerClaims({ connection: away, prefix: randomPrefix() });
  await expect(claims.claim(KEY, 'm1')).rejects.toBeInstanceOf(RedisUnavailableError);
});
