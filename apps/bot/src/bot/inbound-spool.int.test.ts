/** The inbound spools, one contract: Redis, the local file, and Redis with the file behind it. */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InboundSpool, SpooledMessage } from '@ebb/core';
import { createRedis, RedisInboundSpool, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FallbackInboundSpool, FileInboundSpool } from './file-inbound-spool.js';

const redis = createRedis(redisUrl(), { role: 'producer' });
const prefixes: string[] = [];
let dir: string;
beforeAll(async () => {
  await waitForReady(redis);
  dir = await mkdtemp(join(tmpdir(), 'ebb-spool-'));
});
afterAll(async () => {
  for (const prefix of prefixes) await cleanupPrefix(redis, prefix);
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
});

const message = (channelKey: string, i: number): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text: `update ${i}: ünïcode and "quotes"\nand lines`,
  ts: `2026-11-24T10:00:${String(i).padStart(2, '0')}.000Z`,
  platformMessageId: `m${i}`,
});

function redisSpool(): InboundSpool {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  return new RedisInboundSpool({ connection: redis, prefix });
}
let files = 0;
const fileSpool = () => new FileInboundSpool(join(dir, `spool-${++files}.jsonl`));

describe.each([
  ['Redis', redisSpool],
  ['a local file', fileSpool],
  ['Redis with a file behind it', () => new FallbackInboundSpool(redisSpool(), fileSpool())],
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

describe('the file behind Redis', () => {
  it('takes what Redis cannot, and replays both in the order the messages were sent', async () => {
    const down = createRedis('redis://127.0.0.1:1', { role: 'producer' });
    const path = join(dir, 'fallback.jsonl');
    const local = new FileInboundSpool(path);
    const up = redisSpool();
    await up.push(message('web:x', 1));
    await up.push(message('web:x', 3));
    // Redis gone: message 2 (sent between them, delivered late) goes to the file.
    await new FallbackInboundSpool(new RedisInboundSpool({ connection: down }), local).push(
      message('web:x', 2),
    );
    down.disconnect();
    expect(await readFile(path, 'utf8')).toContain('"platformMessageId":"m2"');

    const spool = new FallbackInboundSpool(up, local);
    const all = await spool.peek('web:x', 10);
    expect(all.map((e) => e.message.platformMessageId)).toEqual(['m1', 'm2', 'm3']);
    await spool.remove(
      'web:x',
      all.map((e) => e.id),
    );
    expect(await spool.channels()).toEqual([]);
    // Emptied once nothing is left: the file holds one outage at most.
    expect(await readFile(path, 'utf8')).toBe('');
  });
});
