/**
 * A thread reply taken back by a Slack event that does not say which thread it was in: no
 * `previous_message` (Slack leaves it out for a message no longer in its recent history, or one an
 * admin tool deleted) and no `thread_ts`. The reply was archived under its thread's key, the event
 * names only the channel; the bot finds the thread holding the message and takes it back there.
 * End to end: the real Bolt (Socket Mode) against the fake Slack, the bot in this process, Postgres,
 * and the fake OpenAI server playing a model that repeats the vault code when told it.
 */
import { loadEnv } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { FAKE_SLACK, FakeSlack, type SlackEventPayload } from '@ebb/testing/slack';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startEbb } from '../../src/start-ebb.js';
import { FACT, rowsHolding } from '../forget-fixture.js';
import { chatPromptHolding, smallWindowConfig } from '../small-window.js';

const eventually = { timeout: 20_000, interval: 20 } as const;

/** Repeats the vault code when the last thing said holds it, as a careless model would. */
function echoingModel(request: RecordedRequest) {
  const messages = request.body.messages as readonly { role: string; content?: unknown }[];
  const asked = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  return { content: asked.includes(FACT) ? `Noted: the vault code is ${FACT}.` : 'Noted.' };
}

/** The event as Slack sends it when it no longer knows the message: nothing says which thread. */
function withoutThread(event: SlackEventPayload): SlackEventPayload {
  const { previous_message: _previous, thread_ts: _thread, ...rest } = event;
  const message = rest.message as Record<string, unknown> | undefined;
  if (message === undefined) return rest as SlackEventPayload;
  const { thread_ts: _inner, ...bare } = message;
  return { ...rest, message: bare } as SlackEventPayload;
}

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of running.splice(0).reverse()) await close();
});

async function startWorld() {
  const tokenizer = await loadTokenizer('o200k_base');
  const fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
  running.push(() => fake.close());
  fake.reply(echoingModel);
  const fresh = await freshSchemaDb();
  running.push(() => fresh.close());
  const slack = await FakeSlack.start();
  running.push(() => slack.close());
  const prefix = randomPrefix();
  running.push(() => dropPrefix(prefix));
  const log = new RecordingLogger();
  const config = smallWindowConfig(fake.url, ['[bot]', 'respond_to = "all"', '[slack]', 'mode = "socket"']);
  const ebb = await startEbb({
    config: () => config,
    env: loadEnv({
      OPENAI_API_KEY: 'test-key',
      EBB_REDIS_PREFIX: prefix,
      SLACK_BOT_TOKEN: 'xoxb-test-bot-token',
      SLACK_APP_TOKEN: 'xapp-test-app-token',
    }),
    logger: log,
    withWorker: false,
    webPort: 0,
    database: fresh.database,
    llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
    platforms: { slackApiUrl: slack.apiUrl, slackPort: 0 },
  });
  running.push(() => ebb.close());

  const deliver = async (event: SlackEventPayload) => {
    const id = slack.deliver(event);
    await vi.waitFor(() => expect(slack.ackFor(id)).toBeDefined(), eventually);
  };
  const channelKey = `slack:${slack.identity.teamId}:${FAKE_SLACK.channels.general}`;
  return {
    slack,
    log,
    deliver,
    channelKey,
    channels: new PgChannelStore({ db: fresh.db }),
    rowsHolding: (key: string, text: string) => rowsHolding(fresh.db, key, text),
    /** Delivers `event` and waits for the bot's answer to be posted. */
    async turn(event: SlackEventPayload): Promise<SlackEventPayload> {
      const before = slack.messages.length;
      await deliver(event);
      await vi.waitFor(() => expect(slack.messages.length).toBe(before + 1), eventually);
      return event;
    },
    /** The chat request the model got for the turn that said `text`. */
    promptFor: (text: string) => chatPromptHolding(fake.requests, text),
    /** Waits for the bot to have applied `count` changes of `event` (`message.deleted`, `message.edited`), and returns the last. */
    async changeLogged(event: string, count: number) {
      await vi.waitFor(() => expect(log.events(event)).toHaveLength(count), eventually);
      return log.events(event).at(-1)?.fields;
    },
  };
}

describe('Slack: a thread reply taken back by an event that names no thread', () => {
  it('a deletion without previous_message or thread_ts takes the fact out of the thread and its next prompt', async () => {
    const world = await startWorld();
    const { slack } = world;
    const parent = await world.turn(slack.build.channelMessage({ text: 'release thread: who signs off?' }));
    const threadKey = `${world.channelKey}:${String(parent.ts)}`;
    const reply = await world.turn(
      slack.build.threadReply({
        text: `remember this: the vault code is ${FACT}`,
        threadTs: String(parent.ts),
      }),
    );
    // The reply and the bot's answer repeating it, archived in the thread (the answer once posted,
    // so waited for); nothing in the channel.
    await vi.waitFor(
      async () => expect(await world.rowsHolding(threadKey, FACT)).toMatchObject({ messages: 2 }),
      eventually,
    );
    expect(await world.rowsHolding(world.channelKey, FACT)).toMatchObject({ messages: 0 });

    const deletion = withoutThread(slack.build.messageDeleted(reply));
    expect(deletion).not.toHaveProperty('previous_message');
    expect(deletion).not.toHaveProperty('thread_ts');
    await world.deliver(deletion);

    expect(await world.changeLogged('message.deleted', 1)).toMatchObject({
      channel: threadKey,
      outcome: 'applied',
      messages: 2,
      replies: 1,
    });
    expect(await world.rowsHolding(threadKey, FACT)).toMatchObject({ messages: 0 });
    const raw = (await world.channels.loadContext(threadKey)).raw.map((m) => m.text);
    expect(raw.join('\n')).not.toContain(FACT);
    await world.turn(
      slack.build.threadReply({ text: 'what is the vault code?', threadTs: String(parent.ts) }),
    );
    expect(world.promptFor('what is the vault code?')).not.toContain(FACT);

    // The same event again (Slack retries, a replayed spool) changes nothing.
    await world.deliver(withoutThread(slack.build.messageDeleted(reply)));
    expect(await world.changeLogged('message.deleted', 2)).toMatchObject({
      channel: threadKey,
      outcome: 'unchanged',
    });
  }, 60_000);

  it('an edit without thread_ts or previous_message leaves only the new text in the thread', async () => {
    const world = await startWorld();
    const { slack } = world;
    const parent = await world.turn(slack.build.channelMessage({ text: 'standup thread' }));
    const threadKey = `${world.channelKey}:${String(parent.ts)}`;
    const reply = await world.turn(
      slack.build.threadReply({ text: 'the standup moves to STANDUP-1015', threadTs: String(parent.ts) }),
    );

    const edit = withoutThread(slack.build.messageChanged(reply, 'the standup moves to STANDUP-1130'));
    expect(edit).not.toHaveProperty('previous_message');
    expect(edit.message).not.toHaveProperty('thread_ts');
    await world.deliver(edit);

    expect(await world.changeLogged('message.edited', 1)).toMatchObject({
      channel: threadKey,
      outcome: 'applied',
    });
    expect(await world.rowsHolding(threadKey, 'STANDUP-1015')).toMatchObject({ messages: 0 });
    expect(await world.rowsHolding(threadKey, 'STANDUP-1130')).toMatchObject({ messages: 1 });
  }, 60_000);
});
