/**
 * Postgres going away under a running bot on Discord, which does not redeliver: the messages that
 * arrive meanwhile are spooled on Redis, the channel is told once that the bot will catch up, and
 * once Postgres is back every message is archived once, in the order it was sent; a reply posted
 * while Postgres went away mid-turn is kept the same way.
 * Prints its row of RELIABILITY.md.
 */
import { loadEnv } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { createLogger } from '@ebb/logger';
import { createRedis, RedisInboundSpool, waitForReady } from '@ebb/queue';
import { FakeDiscord } from '@ebb/testing/discord';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { afterAll, expect, it, vi } from 'vitest';
import { postgresBehindProxy } from '../test/postgres-proxy.js';
import { smallWindowConfig, startAckingModel } from '../test/small-window.js';
import { CATCH_UP_NOTICE } from './bot/bot.js';
import { startEbb } from './start-ebb.js';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
}, 30_000);

const WAIT = { timeout: 20_000, interval: 50 };

it('spools Discord messages while Postgres is down and archives each once, in order, when it is back', async () => {
  const fake = await startAckingModel();
  closers.push(() => fake.close());
  const discord = await FakeDiscord.start();
  closers.push(() => discord.close());
  const pg = await postgresBehindProxy();
  closers.push(() => pg.close());
  const { proxy: pgProxy, fresh } = pg;
  const prefix = randomPrefix();
  const redis = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(redis);
  closers.push(async () => {
    await cleanupPrefix(redis, prefix);
    await redis.quit();
  });
  const ebb = await startEbb({
    config: () => smallWindowConfig(fake.url, ['[bot]', 'respond_to = "all"']),
    env: loadEnv({ OPENAI_API_KEY: 'k', DISCORD_TOKEN: discord.token, EBB_REDIS_PREFIX: prefix }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
    platforms: { discordRestApi: discord.restApi },
  });
  closers.push(() => ebb.close());

  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  const general = discord.guild.channel('general');
  const key = `discord:${discord.guild.id}:${general.id}`;
  const posts = () => discord.posted.filter((m) => m.channel_id === general.id).map((m) => m.content);
  const say = (i: number) => discord.postMessage({ channel: general, author: alice, content: `update ${i}` });

  // 20 messages answered as usual.
  for (let i = 0; i < 20; i++) {
    say(i);
    await vi.waitFor(() => expect(posts()).toHaveLength(i + 1), WAIT);
  }
  // Postgres goes away: 20 messages spooled, one notice.
  pgProxy.cut();
  const spool = new RedisInboundSpool({ connection: redis, prefix });
  for (let i = 20; i < 40; i++) {
    say(i);
    await vi.waitFor(async () => expect(await spool.peek(key, 100)).toHaveLength(i - 19), WAIT);
  }
  expect(posts().filter((p) => p === CATCH_UP_NOTICE)).toHaveLength(1);
  // Back: the spool is replayed (without waiting for a message), then 20 more are answered.
  pgProxy.restore();
  await vi.waitFor(async () => expect(await spool.channels()).toEqual([]), WAIT);
  const before = posts().length;
  for (let i = 40; i < 60; i++) {
    say(i);
    await vi.waitFor(() => expect(posts()).toHaveLength(before + i - 39), WAIT);
  }

  const channels = new PgChannelStore({ db: fresh.db });
  const archive = await channels.readArchive(key, 1, (await channels.loadPrefix(key)).headSeq);
  const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
  console.info(
    `Postgres down, Discord: sent 60, acknowledged 60 (20 spooled, 1 notice), archived ${new Set(users).size}, ` +
      `duplicated ${users.length - new Set(users).size}`,
  );
  expect(users).toEqual(Array.from({ length: 60 }, (_, i) => `update ${i}`));

  // A reply posted while Postgres went away mid-turn is spooled too, and archived after its message.
  fake.fail({ kind: 'slow', delayMs: 1_000 }, { times: 1 });
  const asked = fake.completionRequests.length;
  say(60);
  await vi.waitFor(() => expect(fake.completionRequests.length).toBe(asked + 1), WAIT);
  pgProxy.cut();
  await vi.waitFor(async () => expect(await spool.peek(key, 10)).toHaveLength(1), WAIT);
  pgProxy.restore();
  await vi.waitFor(async () => expect(await spool.channels()).toEqual([]), WAIT);
  // No apology after the reply: the reply was posted, and it is kept.
  expect(posts().filter((p) => p.startsWith('Sorry'))).toEqual([]);
  const tail = await channels.readArchive(key, archive.length + 1, archive.length + 2);
  expect(tail.map((m) => [m.role, m.text])).toEqual([
    ['user', 'update 60'],
    ['assistant', posts().at(-1)],
  ]);
}, 90_000);
