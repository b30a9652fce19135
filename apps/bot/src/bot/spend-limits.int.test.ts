/**
 * Spend limits (`[budget]`) on the real bot and Postgres, the real openai client against the fake
 * OpenAI server, whose usage the bot records and prices at `[prices]`: two bots on one database are
 * two replicas, a third started later is a restart, and the clock is the bots' own (`now`).
 */
import { randomUUID } from 'node:crypto';
import { parseConfig, resolveChannel } from '@ebb/config';
import {
  type ChatModel,
  type InboundMessage,
  RetryingUsageStore,
  type TurnResult,
  type UsageStore,
} from '@ebb/core';
import { InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { createDb, PgBudgetNotices, PgChannelStore, PgUsageStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { OpenAiChatModel, openAiClient } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';

/** Prices high enough that a few short turns spend a dollar: the fake counts 4 characters a token. */
const CONFIG = `
[prices."gpt-5.4-mini"]
input_per_mtok = 4000
output_per_mtok = 4000
[prices."gpt-5.4-nano"]
input_per_mtok = 1
output_per_mtok = 1
[channels."web:capped".budget]
daily_usd = 3
[channels."web:cheap".budget]
daily_usd = 3
over = "cheaper_model"
cheaper_model = "gpt-5.4-nano"
[channels."web:team-*".budget]
workspace_daily_usd = 3
over = "silent"
`;
const DAY = Date.parse('2026-12-04T09:00:00Z');

const closers = closersAfterEach();
let fake: FakeOpenAiServer;

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(() => ({ content: 'noted, thanks' }));
});
afterAll(async () => {
  await fake?.close();
});

/** A database of the test's own: the web channels are one workspace, which the tests must not share. */
async function database(): Promise<FreshSchemaDb> {
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());
  return fresh;
}

/** A bot on `fresh`, its clock `clock.now`, answering on the fake with the real client. */
async function replica(
  fresh: FreshSchemaDb,
  clock: { now: number },
  usage: UsageStore = new PgUsageStore({ db: fresh.db }),
) {
  const config = parseConfig(`[llm]\nbase_url = "${fake.url}"\n${CONFIG}`, 'budget.toml');
  const models = new Map<string, ChatModel>();
  const chatModel = (key: string, named?: string) => {
    const llm = resolveChannel(config, key).llm;
    const model = named ?? llm.model;
    let made = models.get(model);
    if (!made) {
      made = new OpenAiChatModel({
        client: openAiClient({ apiKey: 'test-key', baseUrl: fake.url }),
        model,
        maxOutputTokens: llm.maxOutputTokens,
        retry: { attempts: 1, initialDelayMs: 5, maxDelayMs: 10 },
        request: llm.request,
      });
      models.set(model, made);
    }
    return made;
  };
  const web = new RecordingPlatform('web', `out-${randomUUID()}`);
  const log = new RecordingLogger();
  const bot = new Bot({
    config: () => config,
    channels: new PgChannelStore({ db: fresh.db }),
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    usage,
    budgetNotices: new PgBudgetNotices({ db: fresh.db }),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel,
    logger: log,
    now: () => clock.now,
  });
  await bot.start([web]);
  closers.push(() => bot.stop());
  const say = (channelKey: string, text: string): Promise<TurnResult> =>
    bot.handlers().onMessage(message(channelKey, text)) as Promise<TurnResult>;
  return { bot, web, log, say };
}

function message(channelKey: string, text: string): InboundMessage {
  return {
    platform: 'web',
    channelKey,
    platformMessageId: randomUUID(),
    authorId: 'ana',
    authorName: 'ana',
    fromBot: false,
    text,
    ts: new Date(DAY).toISOString(),
    mentionsBot: false,
    direct: true,
    reportsFailure: true,
  };
}

/** The chat requests the fake got for `channelKey`'s messages (each prompt names its own). */
const requestsOf = (marker: string) =>
  fake.completionRequests.filter((r) => JSON.stringify(r.body.messages).includes(marker));

it('gives a channel at its daily limit one notice across replicas and a restart, leaves others alone, and answers again the next day', async () => {
  const fresh = await database();
  const clock = { now: DAY };
  const [a, b] = [await replica(fresh, clock), await replica(fresh, clock)];
  const replies: (string | null)[] = [];
  // Turns alternate between the replicas until the limit: each answered one spends about $1.
  for (let i = 0; i < 10 && !replies.some((r) => r?.startsWith("I've reached")); i++) {
    const { reply } = await (i % 2 === 0 ? a : b).say('web:capped', `capped ${i}`);
    replies.push(reply);
  }
  const notice = replies.at(-1);
  expect(notice).toBe(
    "I've reached this channel's daily spending limit of $3.00, so I won't answer until 2026-12-05 00:00 UTC. Messages are still kept.",
  );
  const answered = replies.filter((r) => r === 'noted, thanks').length;
  expect(answered).toBeGreaterThanOrEqual(2);
  const asked = requestsOf('capped ').length;
  expect(asked).toBe(answered);

  // More messages on both replicas: no notice again, no model call; another channel is answered.
  for (const replica of [a, b, a]) expect((await replica.say('web:capped', 'capped more')).reply).toBeNull();
  expect((await b.say('web:other', 'other 1')).reply).toBe('noted, thanks');
  expect(requestsOf('capped ')).toHaveLength(asked);

  // A restarted replica finds the limit and the notice recorded.
  await a.bot.stop();
  const c = await replica(fresh, clock);
  expect((await c.say('web:capped', 'capped after restart')).reply).toBeNull();
  const notices = [a, b, c].flatMap((r) => r.web.sent).filter((t) => t.startsWith("I've reached"));
  expect(notices).toHaveLength(1);
  const reachedLines = [a, b, c].flatMap((r) => r.log.events('budget.reached').map((e) => e.fields));
  expect(reachedLines).toEqual([
    expect.objectContaining({
      channel: 'web:capped',
      scope: 'channel',
      period: 'day',
      limitUsd: 3,
      over: 'notice',
    }),
  ]);
  expect(Number(reachedLines[0]?.spentUsd)).toBeGreaterThanOrEqual(3);

  // The next UTC day the channel is answered again.
  clock.now = Date.parse('2026-12-05T00:00:01Z');
  expect((await c.say('web:capped', 'capped next day')).reply).toBe('noted, thanks');
  expect(requestsOf('capped ')).toHaveLength(asked + 1);
}, 60_000);

it('answers on the cheaper model once the limit is reached', async () => {
  const clock = { now: DAY };
  const bot = await replica(await database(), clock);
  for (let i = 0; i < 10; i++) await bot.say('web:cheap', `cheap ${i}`);
  const models = requestsOf('cheap ').map((r) => r.body.model);
  expect(models.slice(0, 2)).toEqual(['gpt-5.4-mini', 'gpt-5.4-mini']);
  expect(models.at(-1)).toBe('gpt-5.4-nano');
  expect(models).toHaveLength(10);
  expect(bot.web.sent.filter((t) => t.startsWith("I've reached"))).toEqual([]);
}, 60_000);

it('keeps a workspace limit across its channels', async () => {
  const bot = await replica(await database(), { now: DAY });
  // `web:team-*` share the web workspace's limit: turns in two of its channels reach it together,
  // and then a third, never used, is silent too (no notice).
  const replies: (string | null)[] = [];
  for (let i = 0; i < 10; i++) replies.push((await bot.say(`web:team-${i % 2}`, `team ${i}`)).reply);
  expect(replies.slice(0, 2)).toEqual(['noted, thanks', 'noted, thanks']);
  expect(replies.at(-1)).toBeNull();
  expect((await bot.say('web:team-new', 'team new')).reply).toBeNull();
  expect(bot.web.sent.filter((t) => t.startsWith("I've reached"))).toEqual([]);
}, 60_000);

it('answers when the spend cannot be read, and says so in the log', async () => {
  const fresh = await database();
  const store = new PgUsageStore({ db: fresh.db });
  const unreadable: UsageStore = {
    record: (usage, at) => store.record(usage, at),
    totalsSince: (since, keys) => store.totalsSince(since, keys),
    totalsIn: () => Promise.reject(new Error('connection terminated')),
  };
  const bot = await replica(fresh, { now: DAY }, unreadable);
  expect((await bot.say('web:capped', 'capped while the store is away')).reply).toBe('noted, thanks');
  expect(bot.log.events('budget.check_failed')).toHaveLength(1);
}, 60_000);

it('counts what turns answered while Postgres was cut spent, once it is back', async () => {
  const fresh = await database();
  // The usage store on a connection of its own through a proxy the test cuts: Postgres goes away
  // after the message is archived, between the model's answer and its usage record.
  const target = new URL(testDatabaseUrl());
  const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
  const viaProxy = new URL(testDatabaseUrl());
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const proxied = await createDb({ databaseUrl: viaProxy.toString(), schema: fresh.schema });
  closers.push(async () => {
    proxy.restore();
    await proxied.close();
    await proxy.close();
  });
  const usageLog = new RecordingLogger();
  const usage = new RetryingUsageStore({
    store: new PgUsageStore({ db: proxied.db }),
    log: usageLog,
    // No retry before the test's next turn: its spend read is what writes the kept records.
    retryMs: 60_000,
  });
  closers.push(() => usage.close());
  const bot = await replica(fresh, { now: DAY }, usage);

  proxy.cut();
  // Each answered turn spends about $1 of the $3: five answered while the spend cannot be read.
  for (let i = 0; i < 5; i++) {
    expect((await bot.say('web:capped', `capped in the outage ${i}`)).reply).toBe('noted, thanks');
  }
  expect(bot.log.events('budget.check_failed')).toHaveLength(5);
  expect(usageLog.events('usage.record_deferred')).toHaveLength(1);
  expect(usage.kept).toBe(1);

  proxy.restore();
  // The next turn's spend read writes what was kept first: the limit is reached, and said.
  const after = await bot.say('web:capped', 'capped after the outage');
  expect(after.reply).toMatch(/^I've reached this channel's daily spending limit of \$3\.00/);
  expect(usageLog.events('usage.recorded_late')[0]?.fields).toMatchObject({ records: 5 });
  const rows = await new PgUsageStore({ db: fresh.db }).totalsIn({
    from: new Date(DAY - 3_600_000),
    channel: { key: 'web:capped' },
  });
  expect(rows.reduce((n, r) => n + r.calls, 0)).toBe(5);
}, 60_000);

it('posts the notice with the next message when the first could not be posted', async () => {
  const bot = await replica(await database(), { now: DAY });
  const post = bot.web.send.bind(bot.web);
  let refused = 0;
  bot.web.send = async (key, text) => {
    if (text.startsWith("I've reached") && refused++ === 0) throw new Error('the platform is away');
    return post(key, text);
  };
  const replies: (string | null)[] = [];
  for (let i = 0; i < 10 && !bot.web.sent.some((t) => t.startsWith("I've reached")); i++)
    replies.push((await bot.say('web:capped', `capped ${i}`)).reply);
  expect(refused).toBe(2);
  expect(bot.web.sent.filter((t) => t.startsWith("I've reached"))).toHaveLength(1);
  // The message whose notice failed was kept and reported failed; the next one carried the notice.
  expect(replies.at(-1)).toMatch(/^I've reached this channel's daily spending limit/);
  expect((await bot.say('web:capped', 'capped after the notice')).reply).toBeNull();
}, 60_000);
