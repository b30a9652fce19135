/**
 * The end-to-end suite each platform runs, one test file per platform (`platforms-*.int.test.ts`) so
 * vitest runs them in parallel: the real Bolt and discord.js clients against local fakes of the
 * platforms, the bot, Postgres, BullMQ with a worker in the test's process, and the fake OpenAI
 * server. `END_TO_END_MESSAGES` (600) messages per platform with a 4,000-token window.
 */
import { loadEnv, resolveChannel } from '@ebb/config';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeDiscord } from '@ebb/testing/discord';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { parseFencedBlocks } from '@ebb/testing/prompt-blocks';
import { FAKE_SLACK, FakeSlack } from '@ebb/testing/slack';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../src/start-ebb.js';
import { emergencyTruncations, expectRunsAtTheirThresholds } from './expect-runs.js';
import {
  END_TO_END_MESSAGES,
  endToEndText,
  isPassRequest,
  passReply,
  smallWindowConfig,
} from './small-window.js';

const MESSAGES = END_TO_END_MESSAGES;
const fast = { timeout: 10_000, interval: 2 } as const;

/** What the test needs of a platform: post as a person, count the bot's posts, run a command. */
interface Driver {
  readonly env: Record<string, string>;
  readonly platforms: Parameters<typeof startEbb>[0]['platforms'];
  readonly keys: readonly [string, string];
  /** The user id that runs commands (an admin in the test config). */
  readonly admin: string;
  say(channel: 0 | 1, text: string): Promise<void>;
  botPosts(channel: 0 | 1): number;
  command(name: 'context' | 'compact', args?: string): Promise<string>;
  close(): Promise<void>;
}

export type DriverFactory = () => Promise<Driver>;

export const slackDriver =
  (mode: 'socket' | 'http'): DriverFactory =>
  async () => {
    const slack = await FakeSlack.start();
    const channels = [FAKE_SLACK.channels.general, FAKE_SLACK.channels.random] as const;
    const signingSecret = 'test-signing-secret';
    let eventsUrl = '';
    const team = slack.identity.teamId;
    const driver: Driver = {
      env: {
        SLACK_BOT_TOKEN: 'xoxb-test-bot-token',
        ...(mode === 'socket'
          ? { SLACK_APP_TOKEN: 'xapp-test-app-token' }
          : { SLACK_SIGNING_SECRET: signingSecret }),
      },
      platforms: { slackApiUrl: slack.apiUrl, slackPort: 0 },
      keys: [`slack:${team}:${channels[0]}`, `slack:${team}:${channels[1]}`],
      admin: FAKE_SLACK.users.alice,
      async say(channel, text) {
        const event = slack.build.channelMessage({ text, channel: channels[channel] });
        if (mode === 'socket') {
          const id = slack.deliver(event);
          await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), fast);
        } else {
          const response = await slack.sendEvent(eventsUrl, event, { signingSecret });
          expect(response.status).toBe(200);
        }
      },
      botPosts: (channel) => slack.messages.filter((m) => m.channel === channels[channel]).length,
      async command(name, args = '') {
        const payload = slack.build.slashCommand({
          command: `/${name}`,
          text: args,
          user: FAKE_SLACK.users.alice,
        });
        if (mode === 'socket') {
          const id = slack.deliverCommand(payload);
          await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), fast);
          return JSON.stringify(slack.ackFor(id)?.payload ?? {});
        }
        const response = await slack.sendCommand(eventsUrl, payload, { signingSecret });
        return response.text;
      },
      close: () => slack.close(),
    };
    return Object.assign(driver, {
      setEventsUrl(url: string) {
        eventsUrl = url;
      },
    });
  };

export const discordDriver: DriverFactory = async () => {
  const discord = await FakeDiscord.start();
  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  // Two channels (not a channel and its thread: a thread shares its channel's memories).
  const channels = [discord.guild.channel('general'), discord.addChannel(discord.guild, 'random')] as const;
  return {
    env: { DISCORD_TOKEN: discord.token },
    platforms: { discordRestApi: discord.restApi },
    keys: [`discord:${discord.guild.id}:${channels[0].id}`, `discord:${discord.guild.id}:${channels[1].id}`],
    admin: alice.id,
    async say(channel, text) {
      discord.postMessage({ channel: channels[channel], author: alice, content: text });
    },
    botPosts: (channel) => discord.posted.filter((m) => m.channel_id === channels[channel].id).length,
    async command(name, args = '') {
      const interaction = discord.invokeCommand({
        name,
        channel: channels[0],
        user: alice,
        ...(args ? { options: { focus: args } } : {}),
      });
      return vi.waitFor(() => {
        const reply = discord.interaction(interaction.id).replies.at(-1)?.content;
        if (!reply) throw new Error('no reply yet');
        return reply;
      }, fast);
    },
    close: () => discord.close(),
  };
};

/** The suite on one platform: `name` titles it (`Discord` gives "Discord end to end"). */
export function describePlatformEndToEnd(name: string, makeDriver: DriverFactory): void {
  describe(`${name} end to end`, () => {
    let fake: FakeOpenAiServer;
    let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
    let ebb: RunningEbb;
    let driver: Driver;
    const prefix = randomPrefix();

    beforeAll(async () => {
      const tokenizer = await loadTokenizer('o200k_base');
      fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
      let chats = 0;
      fake.reply(
        (request) =>
          passReply(request, {
            summary: '## Decisions\n- The key rotation happens on Friday at 10:00.',
            memories: [
              {
                type: 'decision',
                text: 'Key rotation is on Friday at 10:00',
                importance: 0.9,
                speaker: 'alice',
                fromSeq: 1,
                toSeq: 1,
              },
            ],
          }) ?? { content: `ack ${++chats}` },
      );
      fresh = await freshSchemaDb();
      driver = await makeDriver();
      const config = smallWindowConfig(fake.url, [
        '[bot]',
        'respond_to = "all"',
        '[slack]',
        `mode = "${driver.env.SLACK_APP_TOKEN ? 'socket' : 'http'}"`,
        `admins = ["${driver.admin}"]`,
        '[discord]',
        `admins = ["${driver.admin}"]`,
      ]);
      ebb = await startEbb({
        config: () => config,
        env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, ...driver.env }),
        logger: createLogger({ level: 'silent' }),
        withWorker: true,
        webPort: 0,
        database: fresh.database,
        llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
        ...(driver.platforms ? { platforms: driver.platforms } : {}),
      });
      const slack = ebb.adapters.find((a) => a.platform === 'slack') as { eventsUrl?: string } | undefined;
      (driver as Driver & { setEventsUrl?: (u: string) => void }).setEventsUrl?.(slack?.eventsUrl ?? '');
    }, 60_000);

    afterAll(async () => {
      await ebb?.close();
      await driver?.close();
      const redis = createRedis(redisUrl(), { role: 'producer' });
      await waitForReady(redis);
      await cleanupPrefix(redis, prefix);
      await redis.quit();
      await fresh?.close();
      await fake?.close();
    });

    it(`answers ${MESSAGES} messages once each through every compaction tier`, async () => {
      for (let i = 0; i < MESSAGES; i++) {
        const text = endToEndText(i);
        await driver.say(0, text);
        await vi.waitFor(() => expect(driver.botPosts(0)).toBe(i + 1), fast);
      }
      const channels = new PgChannelStore({ db: fresh.db });
      // The reply is archived right after it is posted.
      await vi.waitFor(
        async () => expect((await channels.loadPrefix(driver.keys[0])).headSeq).toBe(2 * MESSAGES),
        fast,
      );
      const context = await channels.loadContext(driver.keys[0]);
      const archive = await channels.readArchive(driver.keys[0], 1, context.headSeq);
      expect(archive.filter((m) => m.role === 'assistant')).toHaveLength(MESSAGES);
      expect(fake.completionRequests.filter((r) => r.fault === 'context_length_exceeded')).toEqual([]);

      const runs = new PgRunStore({ db: fresh.db });
      await vi.waitFor(
        async () => {
          const recent = await runs.recent(driver.keys[0], 5);
          expect(recent.every((r) => r.status !== 'queued' && r.status !== 'running')).toBe(true);
        },
        { timeout: 30_000, interval: 50 },
      );
      const all = await runs.recent(driver.keys[0], 10_000);
      // Posted at full speed: passes start early; the long pastes still force emergencies.
      expectRunsAtTheirThresholds(
        all,
        resolveChannel(smallWindowConfig(fake.url), driver.keys[0]).compaction,
        [],
      );
      expect(await emergencyTruncations(ebb.web.url)).toBeGreaterThan(0);
    }, 300_000);

    it('recalls memories in the channel that produced them and never in the other', async () => {
      expect(
        (await new PgMemoryStore({ db: fresh.db }).list({ scope: driver.keys[0] })).length,
      ).toBeGreaterThan(0);
      const before = fake.completionRequests.length;
      await driver.say(0, 'when is the key rotation?');
      await vi.waitFor(() => expect(driver.botPosts(0)).toBe(MESSAGES + 1), fast);
      await driver.say(1, 'when is the key rotation?');
      await vi.waitFor(() => expect(driver.botPosts(1)).toBe(1), fast);
      // The two turns' chat requests, in the order asked, whatever passes ran in between; each ends
      // with the question, then the memories recalled for it (where the channel has some).
      const chats = fake.completionRequests.slice(before).filter((r) => !isPassRequest(r));
      const lastMessage = (r: (typeof chats)[number]) =>
        r.body.messages.filter((m) => !String(m.content ?? '').startsWith('<ebb-memories')).at(-1);
      expect(chats.map((r) => JSON.stringify(lastMessage(r)?.content))).toEqual([
        expect.stringContaining('when is the key rotation?'),
        expect.stringContaining('when is the key rotation?'),
      ]);
      const [inFirst, inOther] = chats.map((r) => JSON.stringify(r.body));
      expect(inFirst).toContain('Key rotation is on Friday at 10:00');
      expect(inOther).not.toContain('Key rotation');
    });

    it('answers /context, and /compact queues a pass with its focus that runs', async () => {
      expect(await driver.command('context')).toContain(`Context of ${driver.keys[0]}`);
      // The conversation's passes have landed (none queued or running), and the channel holds more raw
      // messages than it protects: /compact has something to do and nothing in its way.
      const runs = new PgRunStore({ db: fresh.db });
      const unfinished = async () =>
        (await runs.recent(driver.keys[0], 50)).filter(
          (r) => r.status === 'queued' || r.status === 'running',
        );
      await vi.waitFor(async () => expect(await unfinished()).toEqual([]), { timeout: 30_000, interval: 50 });
      const before = fake.completionRequests.length;
      const reply = await driver.command('compact', 'the rotation plan');
      const queued = /Compaction queued \(focus: the rotation plan\): ([\w.%-]+)/.exec(reply);
      expect(queued, reply).not.toBeNull();
      const jobId = queued?.[1];
      // The queued pass runs to completion, and its summary request carries the focus.
      await vi.waitFor(
        async () =>
          expect((await runs.recent(driver.keys[0], 50)).find((r) => r.jobId === jobId)?.status).toBe(
            'completed',
          ),
        { timeout: 30_000, interval: 50 },
      );
      const focuses = fake.completionRequests
        .slice(before)
        .filter(isPassRequest)
        .flatMap((r) => r.body.messages.filter((m) => m.role === 'user'))
        .flatMap((m) => parseFencedBlocks(typeof m.content === 'string' ? m.content : '').blocks)
        .filter((b) => b.label === 'focus-request')
        .map((b) => b.lines.join('\n'));
      expect(focuses).not.toEqual([]);
      expect(focuses.filter((f) => !f.includes('the rotation plan'))).toEqual([]);
    });
  });
}
