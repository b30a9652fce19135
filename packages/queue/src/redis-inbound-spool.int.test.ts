/**
 * `RedisInboundSpool.scrub` on a real Redis, read back from the bytes Redis keeps: a `DUMP` of every
 * key under the test's prefix, which holds what an RDB snapshot would (the entries `XDEL` only marks
 * deleted included). `DUMP` compresses what it writes (LZF), which can split a planted text; so the
 * Redis is one of the test's own, with `rdbcompression no`, and each test first sees its text there.
 * The contract the spool shares with the file spool is in `apps/bot/src/bot/inbound-spool.int.test.ts`.
 */
import { randomBytes } from 'node:crypto';
import { type SpooledMessage, spooledChange } from '@ebb/core';
import { DisposableRedis, randomPrefix } from '@ebb/queue/test-support';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRedis, waitForReady } from './redis-connection.js';
import { RedisInboundSpool } from './redis-inbound-spool.js';
import { redisKeys } from './redis-keys.js';

let server: DisposableRedis;
let redis: Redis;
beforeAll(async () => {
  server = await DisposableRedis.start();
  redis = createRedis(server.url, { role: 'producer' });
  await waitForReady(redis);
  await redis.config('SET', 'rdbcompression', 'no');
});
afterAll(async () => {
  await redis?.quit();
  await server?.kill();
});

function spoolAndKeys() {
  const prefix = randomPrefix();
  return { spool: new RedisInboundSpool({ connection: redis, prefix }), keys: redisKeys(prefix) };
}

const C = 'slack:T:C';
/** Text planted in a message, found in Redis only if a copy of it is left. */
const secret = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;
const said = (channelKey: string, i: number, text = `update ${i}`): SpooledMessage => ({
  channelKey,
  role: 'user',
  author: 'ana',
  text,
  ts: `2026-11-24T10:00:${String(i).padStart(2, '0')}.000Z`,
  platformMessageId: `m${i}`,
});

/** What Redis holds under the prefix, as `DUMP` serialises each key. */
async function stored(prefix: string): Promise<string> {
  const dumps: Buffer[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', redisKeys(prefix).everything, 'COUNT', 500);
    cursor = next;
    for (const key of keys) {
      const dump = await redis.dumpBuffer(key);
      if (dump) dumps.push(dump);
    }
  } while (cursor !== '0');
  return Buffer.concat(dumps).toString('latin1');
}

it('leaves no byte of a taken-back message, its edit or its dead letter in Redis, and keeps the rest with their ids', async () => {
  const { spool, keys } = spoolAndKeys();
  const [text, edited, refused] = [secret('said'), secret('edited'), secret('refused')];
  await spool.push(said(C, 1, text));
  await spool.push(said(C, 2));
  await spool.push(
    spooledChange({
      kind: 'edited',
      platform: 'slack',
      channelKey: C,
      platformMessageId: 'm1',
      text: edited,
      ts: '2026-11-24T10:00:03.000Z',
    }),
  );
  await spool.push(said(C, 4, refused));
  await spool.push(said(C, 5));
  await spool.push(said('slack:T:D', 6));
  // The replay archived m1 and removed it; m4 and m5 the archive refused for good.
  const [first] = await spool.peek(C, 1);
  await spool.remove(C, [first?.id ?? '']);
  for (const entry of (await spool.peek(C, 10)).filter((e) =>
    ['m4', 'm5'].includes(e.message.platformMessageId),
  )) {
    await spool.deadLetter(C, entry, 'db_constraint: refused');
  }
  // XDEL only marks an entry deleted: its bytes are still in the stream.
  const before = await stored(keys.prefix);
  for (const planted of [text, edited, refused]) expect(before).toContain(planted);
  const kept = await spool.peek(C, 10);

  // The pending edit and the dead letter are records; m1's removed entry was none.
  expect(await spool.scrub(C, ['m1', 'm4'])).toBe(2);
  const after = await stored(keys.prefix);
  for (const planted of [text, edited, refused]) expect(after).not.toContain(planted);
  const left = await spool.peek(C, 10);
  expect(left).toEqual(kept.filter((e) => e.message.platformMessageId === 'm2'));
  expect((await spool.peek('slack:T:D', 10)).map((e) => e.message.platformMessageId)).toEqual(['m6']);
  const dead = await redis.xrange(keys.spoolDeadLetters, '-', '+');
  expect(
    dead.map(([, fields]) => JSON.parse(fields[fields.indexOf('m') + 1] ?? '{}').platformMessageId),
  ).toEqual(['m5']);
  // The stream written anew keeps its last id: a new entry still sorts after every earlier one.
  await spool.push(said(C, 7));
  const [, newest] = (await spool.peek(C, 10)).map((e) => e.id);
  const idOrder = (id: string) => id.split('-').map(BigInt) as [bigint, bigint];
  const [ms, seq] = idOrder(newest ?? '0-0');
  const [lastMs, lastSeq] = idOrder(kept.at(-1)?.id ?? '0-0');
  expect(ms > lastMs || (ms === lastMs && seq > lastSeq)).toBe(true);
});

it('drops a stream the scrub empties, and its channel from the set', async () => {
  const { spool, keys } = spoolAndKeys();
  const text = secret('alone');
  await spool.push(said('discord:G:A', 1, text));
  expect(await spool.channels()).toEqual(['discord:G:A']);
  expect(await spool.scrub('discord:G:A', ['m1'])).toBe(1);
  expect(await spool.channels()).toEqual([]);
  expect(await redis.exists(keys.spool('discord:G:A'))).toBe(0);
  expect(await stored(keys.prefix)).not.toContain(text);
});

it('writes a stream anew that lost an entry before, though nothing in it is the message now', async () => {
  const { spool, keys } = spoolAndKeys();
  const text = secret('replayed');
  await spool.push(said(C, 1, text));
  await spool.push(said(C, 2));
  const [first] = await spool.peek(C, 1);
  await spool.remove(C, [first?.id ?? '']);
  expect(await stored(keys.prefix)).toContain(text);
  expect(await spool.scrub(C, ['m1'])).toBe(0);
  expect(await stored(keys.prefix)).not.toContain(text);
  expect((await spool.peek(C, 10)).map((e) => e.message.platformMessageId)).toEqual(['m2']);
});
