/**
 * Postgres and Redis away together under the real bot, its spool on Redis with the file behind it,
 * as `ebb start` wires it: Postgres goes (m1, m2 spooled), then Redis (m3-m5), then Postgres comes
 * back (m6 is said), then Redis. Every message must be archived once, in the order it was said,
 * whether Redis comes back with its data (a cut connection) or empty (`redis-server --save ''`
 * killed and started again). And an entry the archive refuses for good is set aside, not kept
 * forever in front of its channel.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@ebb/config';
import type { InboundMessage, InboundSpool, SpooledMessage } from '@ebb/core';
import { InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { PgChannelStore } from '@ebb/db';
import {
  createRedis,
  InlineCompactionQueue,
  InProcessContextNotifier,
  RedisInboundSpool,
  waitForReady,
} from '@ebb/queue';
import { DisposableRedis, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import type { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { postgresBehindProxy } from '../../test/postgres-proxy.js';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';
import { FallbackInboundSpool } from './fallback-inbound-spool.js';
import { FileInboundSpool } from './file-inbound-spool.js';
import { CATCH_UP_NOTICE, MAX_REPLAY_TRIES } from './spool-replay.js';

const WAIT = { timeout: 20_000, interval: 20 };
const KEY = 'discord:G1:C1';

const closers = closersAfterEach();

const said = (i: number): InboundMessage => ({
  platform: 'discord',
  channelKey: KEY,
  platformMessageId: `m${i}`,
  authorId: 'u1',
  authorName: 'ana',
  fromBot: false,
  text: `update ${i}`,
  ts: new Date(Date.UTC(2026, 10, 24, 10, 0, i)).toISOString(),
  mentionsBot: false,
  direct: false,
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ebb-spool-outage-'));
  closers.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function startBot(options: {
  channels: PgChannelStore;
  spool: InboundSpool;
  logger?: RecordingLogger;
}): Promise<{ bot: Bot; discord: RecordingPlatform }> {
  const discord = new RecordingPlatform('discord');
  const bot = new Bot({
    config: () => parseConfig('', 'spool-outage.toml'),
    channels: options.channels,
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => ({ label: 'unused', reply: async () => ({ text: 'unused' }) }),
    logger: options.logger ?? new RecordingLogger(),
    spool: options.spool,
    spoolReplayMs: 50,
  });
  await bot.start([discord]);
  closers.push(() => bot.stop());
  return { bot, discord };
}

/** Redis for the spool: `down()` makes it unreachable, `up()` brings it back, with or without its data. */
interface SpoolRedis {
  readonly connection: Redis;
  down(): Promise<void>;
  up(): Promise<void>;
}

async function redisBehindProxy(): Promise<SpoolRedis> {
  const target = new URL(redisUrl());
  const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
  closers.push(() => proxy.close());
  const connection = createRedis(`redis://127.0.0.1:${proxy.port}`, { role: 'producer' });
  closers.push(async () => connection.disconnect());
  await waitForReady(connection);
  return {
    connection,
    async down() {
      proxy.cut();
      await vi.waitFor(() => expect(connection.status).not.toBe('ready'), WAIT);
    },
    async up() {
      proxy.restore();
      await waitForReady(connection, WAIT.timeout);
    },
  };
}

async function redisRestartedEmpty(): Promise<SpoolRedis> {
  const server = await DisposableRedis.start();
  closers.push(() => server.kill());
  const connection = createRedis(`redis://127.0.0.1:${server.port}`, { role: 'producer' });
  closers.push(async () => connection.disconnect());
  await waitForReady(connection);
  return {
    connection,
    async down() {
      await server.kill();
      await vi.waitFor(() => expect(connection.status).not.toBe('ready'), WAIT);
    },
    async up() {
      await server.restart();
      await waitForReady(connection, WAIT.timeout);
    },
  };
}

describe.each([
  ['with its data (a cut connection)', redisBehindProxy],
  ['empty (killed and started again without persistence)', redisRestartedEmpty],
])('Postgres and Redis down together, Redis back %s', (_name, makeRedis) => {
  it('archives every acknowledged message once, in the order it was said', async () => {
    const pg = await postgresBehindProxy();
    closers.push(() => pg.close());
    const channels = new PgChannelStore({ db: pg.fresh.db });
    const redis = await makeRedis();
    const spool = new FallbackInboundSpool(
      new RedisInboundSpool({ connection: redis.connection, prefix: randomPrefix() }),
      new FileInboundSpool(join(await tempDir(), 'spool.jsonl')),
    );
    const { bot, discord } = await startBot({ channels, spool });
    const say = (i: number) => bot.handlers().onMessage(said(i));
    const archived = async () => (await channels.loadContext(KEY)).raw.map((m) => m.text);

    await say(0);
    pg.proxy.cut();
    for (const i of [1, 2]) expect((await say(i))?.archived).toBe('spooled');
    await redis.down();
    for (const i of [3, 4, 5]) expect((await say(i))?.archived).toBe('spooled');
    pg.proxy.restore();
    // Postgres answers again while Redis is still away: the replay, and a new message, go ahead.
    await vi.waitFor(async () => expect((await archived()).length).toBeGreaterThanOrEqual(4), WAIT);
    expect((await say(6))?.archived).not.toBe('failed');
    await redis.up();
    await vi.waitFor(async () => expect(await spool.channels()).toEqual([]), WAIT);

    expect(await archived()).toEqual(Array.from({ length: 7 }, (_, i) => `update ${i}`));
    expect(discord.sent.filter((text) => text === CATCH_UP_NOTICE)).toHaveLength(1);
  }, 60_000);
});

it('sets aside an entry the archive refuses for good, logged, and archives the rest in order', async () => {
  const pg = await postgresBehindProxy();
  closers.push(() => pg.close());
  const channels = new PgChannelStore({ db: pg.fresh.db });
  const path = join(await tempDir(), 'spool.jsonl');
  const left = new FileInboundSpool(path);
  const message = (i: number): SpooledMessage => ({
    channelKey: KEY,
    role: 'user',
    author: 'ana',
    text: `update ${i}`,
    ts: new Date(Date.UTC(2026, 10, 24, 10, 0, i)).toISOString(),
    platformMessageId: `m${i}`,
  });
  await left.push(message(1));
  // A role the archive's check constraint refuses (a spool written by another version could hold one).
  await left.push({ ...message(2), role: 'system' as SpooledMessage['role'] });
  await left.push(message(3));

  const logger = new RecordingLogger();
  const spool = new FileInboundSpool(path);
  await startBot({ channels, spool, logger });
  await vi.waitFor(() => expect(logger.events('spool.dead_lettered')).toHaveLength(1), WAIT);
  await vi.waitFor(async () => expect(await spool.channels()).toEqual([]), WAIT);

  expect((await channels.loadContext(KEY)).raw.map((m) => m.text)).toEqual(['update 1', 'update 3']);
  expect(logger.events('spool.dead_lettered')[0]?.fields).toMatchObject({
    channel: KEY,
    platformMessageId: 'm2',
    tries: MAX_REPLAY_TRIES,
    where: spool.deadLetterPath,
  });
  expect(logger.events('spool.replay_refused')).toHaveLength(MAX_REPLAY_TRIES - 1);
  const [dead] = (await readFile(spool.deadLetterPath, 'utf8')).trim().split('\n');
  expect(JSON.parse(dead ?? '{}')).toMatchObject({
    reason: expect.stringContaining('db_'),
    message: { platformMessageId: 'm2', text: 'update 2' },
  });
}, 60_000);
