import { type InboundSpool, InMemoryInboundSpool, type SpooledMessage } from '@ebb/core';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, waitForReady } from './redis-connection.js';
import { RedisInboundSpool } from './redis-inbound-spool.js';

const redis = createRedis(redisUrl(), { role: 'producer' });
const prefixes: string[] = [];
beforeAll(() => waitForReady(redis));
afterAll(async () => {
  for (const prefix of prefixes) await cleanupPrefix(redis, prefix);
  await redis.quit();
});

const message = (channelKey: string, i: number): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text: `update ${i}: ünïcode and "quotes"\nand lines`,
  ts: `2026-11-24T10:00:0${i}Z`,
  platformMessageId: `m${i}`,
});

describe.each([
  [
    'Redis',
    (): InboundSpool => {
      const prefix = randomPrefix();
      prefixes.push(prefix);
      return new RedisInboundSpool({ connection: redis, prefix });
    },
  ],
  ['in memory', (): InboundSpool => new InMemoryInboundSpool()],
])('InboundSpool on %s', (_name, make) => {
  it('keeps each channel in arrival order until removed, and lists the channels that have messages', async () => {
    const spool = make();
    for (let i = 0; i < 3; i++) await spool.push(message('discord:G:A', i));
    await spool.push(message('slack:T:B', 9));
    expect([...(await spool.channels())].sort()).toEqual(['discord:G:A', 'slack:T:B']);
    const first = await spool.peek('discord:G:A', 2);
    expect(first.map((e) => e.message)).toEqual([message('discord:G:A', 0), message('discord:G:A', 1)]);
    await spool.remove(
      'discord:G:A',
      first.map((e) => e.id),
    );
    expect((await spool.peek('discord:G:A', 10)).map((e) => e.message.platformMessageId)).toEqual(['m2']);
    const [last] = await spool.peek('discord:G:A', 10);
    await spool.remove('discord:G:A', [last?.id ?? '']);
    expect(await spool.channels()).toEqual(['slack:T:B']);
    expect(await spool.peek('discord:G:A', 10)).toEqual([]);
  });
});
