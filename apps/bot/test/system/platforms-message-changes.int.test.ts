/**
 * What a person takes back on the platform, end to end: the real Bolt (Socket Mode) against the fake
 * Slack and the real discord.js against the fake Discord, the bot and a worker in this process,
 * Postgres, BullMQ, and the fake OpenAI server playing a careless model: its reply to the vault code
 * repeats it, a pass that sees it summarizes and remembers it. A deletion of the message leaves the
 * fact in no row of messages, memories, compaction_runs or context_spans (active or retired), and the
 * next prompt does not hold it; an edit leaves only the new text in the archive, the raw context and the prompt.
 */
import { loadEnv } from '@ebb/config';
import { PgChannelStore, rowsOf } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeDiscord, type WireMessage } from '@ebb/testing/discord';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { FAKE_SLACK, FakeSlack, type SlackEventPayload } from '@ebb/testing/slack';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { FACT, rowsHolding } from '../forget-fixture.js';
import { chatPromptHolding, isPassRequest, passReply, smallWindowConfig } from '../small-window.js';

const OLD_TIME = 'STANDUP-1015';
const NEW_TIME = 'STANDUP-1130';
/** Enough for `/compact` to plan a pass over the fact, its reply and more under `smallWindowConfig`. */
const FILLERS = 14;
const eventually = { timeout: 20_000, interval: 20 } as const;

/** A message as the platform knows it, to delete or edit later. */
type Posted = SlackEventPayload | WireMessage;

/** What the test does on a platform: post as alice, take a message back, ask for a pass. */
interface Driver {
  readonly env: Record<string, string>;
  readonly platforms: NonNullable<Parameters<typeof startEbb>[0]['platforms']>;
  readonly key: string;
  readonly admin: string;
  readonly config: readonly string[];
  say(text: string): Promise<Posted>;
  delete(message: Posted): Promise<void>;
  edit(message: Posted, text: string): Promise<void>;
  botPosts(): number;
  compact(): Promise<void>;
  close(): Promise<void>;
}

async function slackDriver(): Promise<Driver> {
  const slack = await FakeSlack.start();
  const deliver = async (event: SlackEventPayload) => {
    const id = slack.deliver(event);
    await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), eventually);
  };
  const general = FAKE_SLACK.channels.general;
  return {
    env: { SLACK_BOT_TOKEN: 'xoxb-test-bot-token', SLACK_APP_TOKEN: 'xapp-test-app-token' },
    platforms: { slackApiUrl: slack.apiUrl, slackPort: 0 },
    key: `slack:${slack.identity.teamId}:${general}`,
    admin: FAKE_SLACK.users.alice,
    config: ['[slack]', 'mode = "socket"', `admins = ["${FAKE_SLACK.users.alice}"]`],
    async say(text) {
      const event = slack.build.channelMessage({ text });
      await deliver(event);
      return event;
    },
    delete: (message) => deliver(slack.build.messageDeleted(message as SlackEventPayload)),
    edit: (message, text) => deliver(slack.build.messageChanged(message as SlackEventPayload, text)),
    botPosts: () => slack.messages.length,
    async compact() {
      const id = slack.deliverCommand(slack.build.slashCommand({ command: '/compact' }));
      await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), eventually);
    },
    close: () => slack.close(),
  };
}

async function discordDriver(): Promise<Driver> {
  const discord = await FakeDiscord.start();
  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  const general = discord.guild.channel('general');
  return {
    env: { DISCORD_TOKEN: discord.token },
    platforms: { discordRestApi: discord.restApi },
    key: `discord:${discord.guild.id}:${general.id}`,
    admin: alice.id,
    config: ['[discord]', `admins = ["${alice.id}"]`],
    async say(content) {
      return discord.postMessage({ channel: general, author: alice, content });
    },
    async delete(message) {
      discord.deleteMessage(message as WireMessage);
    },
    async edit(message, text) {
      discord.editMessage(message as WireMessage, text);
    },
    botPosts: () => discord.posted.length,
    async compact() {
      const interaction = discord.invokeCommand({ name: 'compact', channel: general, user: alice });
      await vi.waitFor(() => expect(discord.interaction(interaction.id).replies).not.toEqual([]), eventually);
    },
    close: () => discord.close(),
  };
}

/** The careless model: it repeats the vault code when told it, and summarizes and remembers it when it sees it. */
function carelessModel(request: RecordedRequest) {
  const input = JSON.stringify(request.body.messages);
  const sawFact = input.includes(FACT);
  const pass = passReply(request, {
    summary: `Earlier: the release plan.${sawFact ? ` Alice said the vault code is ${FACT}.` : ''}`,
    memories: sawFact
      ? [
          {
            type: 'fact',
            text: `The vault code is ${FACT}`,
            importance: 0.9,
            speaker: 'Alice',
            fromSeq: 1,
            toSeq: 1,
          },
        ]
      : [],
  });
  if (pass) return pass;
  const messages = request.body.messages as readonly { role: string; content?: unknown }[];
  const asked = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  return { content: asked.includes(FACT) ? `Noted: the vault code is ${FACT}.` : 'Noted.' };
}

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of running.splice(0).reverse()) await close();
});

async function startWorld(makeDriver: () => Promise<Driver>) {
  const tokenizer = await loadTokenizer('o200k_base');
  const fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
  running.push(() => fake.close());
  fake.reply(carelessModel);
  const fresh = await freshSchemaDb();
  running.push(() => fresh.close());
  const driver = await makeDriver();
  running.push(() => driver.close());
  const prefix = randomPrefix();
  running.push(() => dropPrefix(prefix));
  const config = smallWindowConfig(fake.url, ['[bot]', 'respond_to = "all"', ...driver.config]);
  const ebb: RunningEbb = await startEbb({
    config: () => config,
    env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, ...driver.env }),
    logger: createLogger({ level: 'silent' }),
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
    platforms: driver.platforms,
  });
  running.push(() => ebb.close());

  const key = driver.key;
  return {
    driver,
    fake,
    channels: new PgChannelStore({ db: fresh.db }),
    /** Says `text` and waits for the bot's answer to be posted. */
    async turn(text: string): Promise<Posted> {
      const before = driver.botPosts();
      const posted = await driver.say(text);
      await vi.waitFor(() => expect(driver.botPosts()).toBe(before + 1), eventually);
      return posted;
    },
    /** Rows holding `text` in any column. */
    rowsHolding: (text: string) => rowsHolding(fresh.db, key, text),
    completedRuns: async () =>
      rowsOf<{ n: number }>(
        await fresh.db.execute(
          sql`select count(*)::int as n from compaction_runs where channel_key = ${key} and status = 'completed'`,
        ),
      )[0]?.n,
    /** The summary calls recorded in the channel's usage, and the ones the model got. */
    summaryCalls: async () => ({
      recorded: rowsOf<{ n: number }>(
        await fresh.db.execute(
          sql`select coalesce(sum(calls), 0)::int as n from llm_usage where channel_key = ${key} and purpose = 'summary'`,
        ),
      )[0]?.n,
      made: fake.requests.filter(isPassRequest).length,
    }),
    /** The chat request the model got for the turn that said `text`. */
    promptFor: (text: string) => chatPromptHolding(fake.requests, text),
  };
}

describe.each([
  ['Slack', slackDriver],
  ['Discord', discordDriver],
] as const)('%s: messages taken back', (_name, makeDriver) => {
  it('a deleted fact is in no row and no prompt; an edit leaves only the new text', async () => {
    const world = await startWorld(makeDriver);
    const { driver } = world;

    // Said first (seq 1), repeated by the bot's reply (seq 2), then summarized and remembered.
    const fact = await world.turn(`remember this: the vault code is ${FACT}`);
    for (let i = 1; i <= FILLERS; i++) {
      await world.turn(
        `message ${i} about the release plan: the staging deploy, the changelog, the rollback drill and who signs off on Friday`,
      );
    }
    await driver.compact();
    await vi.waitFor(async () => expect(await world.completedRuns()).toBe(1), eventually);
    expect(await world.rowsHolding(FACT)).toEqual({
      messages: 2,
      memories: 1,
      compactionRuns: 1,
      activeSpans: 1,
      retiredSpans: 0,
    });

    await driver.delete(fact);

    await vi.waitFor(
      async () =>
        expect(await world.rowsHolding(FACT)).toEqual({
          messages: 0,
          memories: 0,
          compactionRuns: 0,
          activeSpans: 0,
          retiredSpans: 0,
        }),
      eventually,
    );
    // The summary written again is the channel's cost too, as the worker's pass is.
    await vi.waitFor(async () => {
      const calls = await world.summaryCalls();
      expect(calls.made).toBeGreaterThan(1);
      expect(calls.recorded).toBe(calls.made);
    }, eventually);
    await world.turn('what is the vault code?');
    expect(world.promptFor('what is the vault code?')).not.toContain(FACT);

    const standup = await world.turn(`the standup moves to ${OLD_TIME}`);
    await driver.edit(standup, `the standup moves to ${NEW_TIME}`);

    await vi.waitFor(
      async () => expect(await world.rowsHolding(NEW_TIME)).toMatchObject({ messages: 1 }),
      eventually,
    );
    expect(await world.rowsHolding(OLD_TIME)).toMatchObject({ messages: 0 });
    const raw = (await world.channels.loadContext(driver.key)).raw.map((m) => m.text);
    expect(raw).toContainEqual(expect.stringContaining(NEW_TIME));
    expect(raw.join('\n')).not.toContain(OLD_TIME);
    await world.turn('when is the standup?');
    const prompt = world.promptFor('when is the standup?');
    expect(prompt).toContain(NEW_TIME);
    expect(prompt).not.toContain(OLD_TIME);
  }, 60_000);
});
