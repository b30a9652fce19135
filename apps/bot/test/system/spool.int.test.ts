/**
 * Postgres going away under a running bot on Discord and on Slack (Socket Mode), which do not
 * redeliver: the messages that arrive meanwhile are spooled (on disk, and on Redis, where this test
 * watches them), the channel is told once that the bot will catch up, and once Postgres is back
 * every message is archived once, in the order it was sent; a reply posted while Postgres went away
 * mid-turn is kept the same way.
 * Prints its rows of RELIABILITY.md.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEnv } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { createLogger } from '@ebb/logger';
import { createRedis, RedisInboundSpool, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeDiscord } from '@ebb/testing/discord';
import { FAKE_SLACK, FakeSlack } from '@ebb/testing/slack';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CATCH_UP_NOTICE } from '../../src/bot/spool-replay.js';
import { startEbb } from '../../src/start-ebb.js';
import { postgresBehindProxy } from '../postgres-proxy.js';
import { smallWindowConfig, startAckingModel } from '../small-window.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
}, 30_000);

/** One chat platform played by its fake: how Ebb reaches it, one channel, and what the bot posted there. */
interface Platform {
  readonly env: Record<string, string>;
  readonly platforms: {
    readonly slackApiUrl?: string;
    readonly slackPort?: number;
    readonly discordRestApi?: string;
  };
  readonly key: string;
  /** Sends message `text` as a user; resolves once the platform saw it acknowledged (Slack) or sent (Discord). */
  say(text: string): Promise<void>;
  posts(): string[];
  close(): Promise<void>;
}

async function discordPlatform(): Promise<Platform> {
  const discord = await FakeDiscord.start();
  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  const general = discord.guild.channel('general');
  return {
    env: { DISCORD_TOKEN: discord.token },
    platforms: { discordRestApi: discord.restApi },
    key: `discord:${discord.guild.id}:${general.id}`,
    async say(text) {
      discord.postMessage({ channel: general, author: alice, content: text });
    },
    posts: () => discord.posted.filter((m) => m.channel_id === general.id).map((m) => m.content),
    close: () => discord.close(),
  };
}

async function slackPlatform(): Promise<Platform> {
  const slack = await FakeSlack.start();
  const channel = FAKE_SLACK.channels.general;
  return {
    env: { SLACK_BOT_TOKEN: 'xoxb-test-bot-token', SLACK_APP_TOKEN: 'xapp-test-app-token' },
    platforms: { slackApiUrl: slack.apiUrl, slackPort: 0 },
    key: `slack:${slack.identity.teamId}:${channel}`,
    async say(text) {
      const id = slack.deliver(slack.build.channelMessage({ text, channel }));
      await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), WAIT);
    },
    posts: () => slack.messages.filter((m) => m.channel === channel).map((m) => m.text ?? ''),
    close: () => slack.close(),
  };
}

const WAIT = { timeout: 20_000, interval: 5 };

describe.each([
  ['Discord', discordPlatform],
  ['Slack (Socket Mode)', slackPlatform],
])('%s', (name, makePlatform) => {
  it('spools messages while Postgres is down and archives each once, in order, when it is back', async () => {
    const fake = await startAckingModel();
    closers.push(() => fake.close());
    const platform = await makePlatform();
    closers.push(() => platform.close());
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
    // The spool's file of its own: never the repository's ./.ebb, which another test or `npm start` may use.
    const dataDir = await mkdtemp(join(tmpdir(), 'ebb-spool-data-'));
    closers.push(() => rm(dataDir, { recursive: true, force: true }));
    const ebb = await startEbb({
      config: () => smallWindowConfig(fake.url, ['[bot]', 'respond_to = "all"']),
      env: loadEnv({ OPENAI_API_KEY: 'k', EBB_REDIS_PREFIX: prefix, EBB_DATA_DIR: dataDir, ...platform.env }),
      logger: createLogger({ level: 'silent' }),
      withWorker: false,
      webPort: 0,
      database: fresh.database,
      processMetrics: false,
      platforms: platform.platforms,
    });
    closers.push(() => ebb.close());

    const { key } = platform;
    const posts = () => platform.posts();
    let acknowledged = 0;
    const say = async (i: number) => {
      await platform.say(`update ${i}`);
      acknowledged++;
    };

    // 20 messages answered as usual.
    for (let i = 0; i < 20; i++) {
      await say(i);
      await vi.waitFor(() => expect(posts()).toHaveLength(i + 1), WAIT);
    }
    // A reply is posted before it is archived: wait for the archive to end with the last one (a cut
    // before that would spool the reply too, which is right, but not what this count is about).
    const channels = new PgChannelStore({ db: fresh.db });
    const archived = async () => channels.readArchive(key, 1, (await channels.loadPrefix(key)).headSeq);
    await vi.waitFor(async () => expect((await archived()).at(-1)?.text).toBe(posts().at(-1)), WAIT);
    // Postgres goes away: 20 messages spooled, one notice.
    pgProxy.cut();
    const spool = new RedisInboundSpool({ connection: redis, prefix });
    for (let i = 20; i < 40; i++) {
      await say(i);
      await vi.waitFor(async () => expect(await spool.peek(key, 100)).toHaveLength(i - 19), WAIT);
    }
    expect(posts().filter((p) => p === CATCH_UP_NOTICE)).toHaveLength(1);
    // Back: the spool is replayed (without waiting for a message), then 20 more are answered.
    pgProxy.restore();
    await vi.waitFor(async () => expect(await spool.channels()).toEqual([]), WAIT);
    const before = posts().length;
    for (let i = 40; i < 60; i++) {
      await say(i);
      await vi.waitFor(() => expect(posts()).toHaveLength(before + i - 39), WAIT);
    }

    await vi.waitFor(async () => expect((await archived()).at(-1)?.text).toBe(posts().at(-1)), WAIT);
    const archive = await archived();
    const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
    console.info(
      `Postgres down, ${name}: sent 60, acknowledged ${acknowledged} (20 spooled, 1 notice), archived ${new Set(users).size}, ` +
        `duplicated ${users.length - new Set(users).size}`,
    );
    expect(users).toEqual(Array.from({ length: 60 }, (_, i) => `update ${i}`));

    // A reply posted while Postgres went away mid-turn is spooled too, and archived after its message.
    fake.fail({ kind: 'slow', delayMs: 1_000 }, { times: 1 });
    const asked = fake.completionRequests.length;
    await say(60);
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
});
