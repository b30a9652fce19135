/**
 * Deletions and edits in a Discord thread discord.js has never heard of, end to end: the real
 * discord.js against the fake Discord, the bot and a worker in this process, Postgres, BullMQ and the
 * fake OpenAI server. A thread that was archived while Ebb was down is in no GUILD_CREATE, so after
 * the restart discord.js drops every MESSAGE_DELETE and MESSAGE_UPDATE in it; the adapter asks
 * Discord what the channel is and reports the change under the thread's key. The deleted fact is
 * then in no archived message of the thread and in no prompt; the edit leaves only the new text.
 */
import { loadEnv } from '@ebb/config';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeDiscord, type WireMessage } from '@ebb/testing/discord';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterEach, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { FACT, rowsHolding } from '../forget-fixture.js';
import { chatPromptHolding, passReply, smallWindowConfig } from '../small-window.js';

const OLD_TIME = 'STANDUP-1015';
const NEW_TIME = 'STANDUP-1130';
const eventually = { timeout: 20_000, interval: 20 } as const;

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of running.splice(0).reverse()) await close();
});

async function startWorld() {
  const model = await FakeOpenAiServer.start();
  running.push(() => model.close());
  model.reply(
    (request) => passReply(request, { summary: 'Earlier: the plan.', memories: [] }) ?? { content: 'Noted.' },
  );
  const fresh = await freshSchemaDb();
  running.push(() => fresh.close());
  const discord = await FakeDiscord.start();
  running.push(() => discord.close());
  const prefix = randomPrefix();
  running.push(() => dropPrefix(prefix));
  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  const thread = discord.guild.channel('deploy-plan');
  const config = smallWindowConfig(model.url, ['[bot]', 'respond_to = "all"']);
  let ebb: RunningEbb | undefined;
  running.push(() => ebb?.close() ?? Promise.resolve());

  /** The key a message in the thread is archived under: the thread under its channel. */
  const key = `discord:${discord.guild.id}:${thread.parent_id}:${thread.id}`;

  return {
    discord,
    thread,
    async start(): Promise<void> {
      ebb = await startEbb({
        config: () => config,
        env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, DISCORD_TOKEN: discord.token }),
        logger: createLogger({ level: 'silent' }),
        withWorker: true,
        webPort: 0,
        database: fresh.database,
        llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
        platforms: { discordRestApi: discord.restApi },
      });
    },
    async stop(): Promise<void> {
      await ebb?.close();
      ebb = undefined;
    },
    /** Alice says `content` in the thread; waits for the bot's answer there. */
    async say(content: string): Promise<WireMessage> {
      const answered = () => discord.posted.filter((m) => m.channel_id === thread.id).length;
      const before = answered();
      const message = discord.postMessage({ channel: thread, author: alice, content });
      await vi.waitFor(() => expect(answered()).toBe(before + 1), eventually);
      return message;
    },
    /** Rows of the thread holding `text` in any column. */
    rowsHolding: (text: string) => rowsHolding(fresh.db, key, text),
    /** The chat request the model got for the turn that said `text`. */
    promptFor: (text: string) => chatPromptHolding(model.requests, text),
  };
}

it('a deletion and an edit in a thread archived while Ebb was down reach the archive and the next prompt', async () => {
  const world = await startWorld();
  const { discord, thread } = world;
  await world.start();
  const fact = await world.say(`remember this: the vault code is ${FACT}`);
  const standup = await world.say(`the standup moves to ${OLD_TIME}`);
  expect(await world.rowsHolding(FACT)).toMatchObject({ messages: 1 });
  expect(await world.rowsHolding(OLD_TIME)).toMatchObject({ messages: 1 });

  // The thread goes quiet and is archived while Ebb is down: the new session's GUILD_CREATE leaves it out.
  await world.stop();
  discord.archiveThread(thread);
  await world.start();
  discord.deleteMessage(fact);
  discord.editMessage(standup, `the standup moves to ${NEW_TIME}`);

  await vi.waitFor(async () => {
    expect(await world.rowsHolding(FACT)).toMatchObject({ messages: 0 });
    expect(await world.rowsHolding(NEW_TIME)).toMatchObject({ messages: 1 });
  }, eventually);
  expect(await world.rowsHolding(OLD_TIME)).toMatchObject({ messages: 0 });
  // Posting unarchives the thread; the turn is answered from the redacted and edited context.
  await world.say('what is the vault code, and when is the standup?');
  const prompt = world.promptFor('what is the vault code, and when is the standup?');
  expect(prompt).not.toContain(FACT);
  expect(prompt).not.toContain(OLD_TIME);
  expect(prompt).toContain(NEW_TIME);
}, 60_000);
