/**
 * A deletion or an edit on the platform, through the bot's handler, on Postgres with the worker's real
 * passes and the fake OpenAI server playing a model that repeats whatever it reads: a deleted fact
 * (already summarized, remembered, in checkpoints, repeated by the bot's reply, and said again raw) is
 * in 0 rows of messages, memories, compaction_runs and context spans once the queued pass is done,
 * and no prompt the model receives after it holds it (its summary is set aside until the pass). The
 * turn after the deletion does not wait for that pass, and nothing of it is an emergency. An edit leaves only the new text in the archive and
 * the raw context, with the tokens counted again. The world is test/forget-fixture.ts.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { passSettingsResolver } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import {
  type CompactionLogEvent,
  type InboundMessage,
  type InboundSpool,
  type MessageChange,
  PENDING_SUMMARY,
  type PlatformAdapter,
  REDACTED_MESSAGE,
  toNewMessage,
} from '@ebb/core';
import { loadTokenizer, OpenAiChatModel, openAiClient } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import type { RecordedRequest } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { WebAdapter } from '@ebb/web';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { carelessModel, FACT, type ForgetFixture, startForgetFixture } from '../../test/forget-fixture.js';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';
import { FileInboundSpool } from './file-inbound-spool.js';

let world: ForgetFixture;
const closers = closersAfterEach();

beforeAll(async () => {
  world = await startForgetFixture();
});
afterAll(async () => {
  await world?.close();
});

/** What `startBot` returns as handlers when the bot runs on a real adapter (the test talks to that). */
const HANDLERS_OF_ANOTHER_PLATFORM = {
  onMessage: async () => undefined,
  onCommand: async () => '',
  onMessageChange: async () => {},
};

/** A summarizer's request (it asks for JSON); the chat model's asks for none. */
const isSummary = (request: RecordedRequest) => request.body.response_format !== undefined;

async function startBot(toml = world.toml, extra: { spool?: InboundSpool; platform?: PlatformAdapter } = {}) {
  const config = () => parseConfig(toml, 'changes.toml');
  const web = new RecordingPlatform('web', `out-${Math.random()}`);
  const logger = new RecordingLogger();
  const events: CompactionLogEvent[] = [];
  const client = openAiClient({ apiKey: 'test-key', baseUrl: world.fake.url });
  const bot = new Bot({
    config,
    channels: world.channels,
    memories: world.memories,
    runs: world.runs,
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => new OpenAiChatModel({ client, model: 'gpt-5.4-mini', maxOutputTokens: 200 }),
    passSettings: passSettingsResolver({ config, env: { OPENAI_API_KEY: 'test-key' } }),
    logger,
    onEvent: (e) => events.push(e),
    ...(extra.spool === undefined ? {} : { spool: extra.spool, spoolReplayMs: 50 }),
  });
  await bot.start([extra.platform ?? web]);
  closers.push(() => bot.stop());
  const handlers = web.handlers ?? (extra.platform ? HANDLERS_OF_ANOTHER_PLATFORM : undefined);
  if (!handlers?.onMessageChange) throw new Error('the bot gave no onMessageChange handler');
  return { bot, web, logger, events, handlers, change: handlers.onMessageChange };
}

const asked = (channelKey: string, text: string, id: string): InboundMessage => ({
  platform: 'web',
  channelKey,
  platformMessageId: id,
  authorId: 'ana',
  authorName: 'ana',
  fromBot: false,
  text,
  ts: new Date().toISOString(),
  mentionsBot: true,
  direct: false,
});

const deleted = (channelKey: string, ids: string[]): MessageChange => ({
  kind: 'deleted',
  platform: 'web',
  channelKey,
  platformMessageIds: ids,
  ts: new Date().toISOString(),
});

describe('a deletion', () => {
  it('leaves the fact in no table and no prompt; the turn after it never waits for the queued pass', async () => {
    const key = 'web:del1';
    await world.plant(key, { echo: true });
    // Said at seq 4 (summarized, remembered, checkpointed), repeated by the bot at seq 5, said again raw at 27.
    expect(await world.whereIsTheFact(key)).toEqual({
      memories: 1,
      compactionRuns: 2,
      activeSpans: 1,
      retiredSpans: 1,
      messages: 3,
    });
    const { bot, logger, events, handlers, change } = await startBot();
    // The summarizer is held until the turn after the deletion is answered.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let summaryAsked: () => void = () => {};
    const summaryStarted = new Promise<void>((resolve) => {
      summaryAsked = resolve;
    });
    world.fake.reply(async (request) => {
      if (isSummary(request)) {
        summaryAsked();
        await held;
      }
      return carelessModel(request);
    });
    closers.push(async () => {
      release();
      world.fake.reply(carelessModel);
    });

    await change(deleted(key, ['m4', 'm27']));
    const [line] = logger.events('message.deleted');
    expect(line?.fields).toMatchObject({
      channel: key,
      outcome: 'applied',
      messages: 3,
      replies: 1,
      raw: 1,
      memories: 1,
      checkpoints: 2,
      summaries: 1,
    });
    expect(JSON.stringify(line?.fields)).not.toContain(FACT);
    // The archive and the raw context hold tombstones already; the summary waits for its pass.
    const archive = await world.channels.readArchive(key, 1, 30);
    expect(archive.filter((m) => m.text === REDACTED_MESSAGE).map((m) => [m.seq, m.author])).toEqual([
      [4, 'mallory'],
      [5, 'ebb'],
      [27, 'mallory'],
    ]);
    await world.expectConsistentTokens(key);

    // The next turn is answered while the pass is held: it never waits for it.
    await summaryStarted;
    const before = world.fake.requests.length;
    const turn = await handlers.onMessage(asked(key, '@ebb what is the vault code?', 'q1'));
    expect(turn?.archived).toBe('stored');
    expect(turn?.reply).not.toBeNull();
    const prompt = world.fake.requests.slice(before).find((r) => !isSummary(r));
    expect(prompt).toBeDefined();
    expect(JSON.stringify(prompt?.body)).toContain('what is the vault code?');
    // Its summary was set aside at once: not even this prompt, before the pass, shows the fact.
    expect(JSON.stringify(prompt?.body)).not.toContain(FACT);
    expect(JSON.stringify(prompt?.body)).toContain(PENDING_SUMMARY);

    release();
    await bot.takeBacksIdle();
    expect(logger.events('takeback.completed')[0]?.fields).toMatchObject({ channel: key, summaries: 1 });
    // Everywhere a pass, a memory, a checkpoint or the archive could keep it: gone.
    await world.expectNowhere(key);
    // What the rest of the channel taught stays.
    expect((await world.memories.list({ channelKey: key })).map((m) => m.text)).toEqual([
      'Ana runs the deploys',
    ]);
    // The next prompt the model receives holds none of it.
    const after = world.fake.requests.length;
    await handlers.onMessage(asked(key, '@ebb and now?', 'q2'));
    const next = world.fake.requests.slice(after).find((r) => !isSummary(r));
    expect(next).toBeDefined();
    expect(JSON.stringify(next?.body)).not.toContain(FACT);
    expect(JSON.stringify(next?.body)).toContain(REDACTED_MESSAGE);
    // No emergency: the summarized message cost the channel nothing but the queued pass.
    expect(events.filter((e) => e.event === 'compaction.emergency')).toEqual([]);
    await world.expectConsistentTokens(key);

    // The same deletion again (a platform's retry, a replayed spool) changes nothing.
    await change(deleted(key, ['m4', 'nope']));
    expect(logger.events('message.deleted')[1]?.fields).toMatchObject({ outcome: 'unchanged', messages: 0 });
  });

  it('through the web API, end to end: DELETE leaves the fact nowhere', async () => {
    const key = 'web:del3';
    await world.plant(key);
    const web = new WebAdapter({ port: 0 });
    const { bot } = await startBot(world.toml, { platform: web });
    for (const id of ['m4', 'm27']) {
      const res = await fetch(`${web.url}/api/channels/del3/messages/${id}`, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, deleted: true, outcome: 'applied' });
    }
    await bot.takeBacksIdle();
    await world.expectNowhere(key);
    // The next prompt the model receives, asked through the API: none of it.
    const before = world.fake.requests.length;
    const asked = await fetch(`${web.url}/api/channels/del3/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: '@ebb what was the vault code?' }),
    });
    expect(asked.status).toBe(200);
    const prompt = world.fake.requests.slice(before).find((r) => !isSummary(r));
    expect(JSON.stringify(prompt?.body)).toContain('what was the vault code?');
    expect(JSON.stringify(prompt?.body)).not.toContain(FACT);
  });

  it('takes the search_history results that quoted the message with it, and the answer that read them', async () => {
    const key = 'web:del5';
    // seq 8 is the bot's search_history result quoting seq 4 word for word, and seq 9 its answer
    // repeating it (inside the summary 1..20).
    await world.plant(key, { recall: true });
    expect(await world.whereIsTheFact(key)).toMatchObject({ messages: 4 });
    const { bot, logger, change } = await startBot();
    await change(deleted(key, ['m4', 'm27']));
    expect(logger.events('message.deleted')[0]?.fields).toMatchObject({ messages: 4, copies: 2, replies: 0 });
    await bot.takeBacksIdle();
    await world.expectNowhere(key);
    await world.expectCopyRedacted(key);
  });

  it('during a Postgres outage is spooled and applied after it, in order with the messages', async () => {
    const key = 'web:out1';
    await world.plant(key);
    const spool = new FileInboundSpool(join(mkdtempSync(join(tmpdir(), 'ebb-changes-')), 'spool.jsonl'));
    const { bot, logger, handlers, change } = await startBot(world.toml, { spool });
    world.proxy.cut();
    closers.push(async () => world.proxy.restore());
    // Said while the archive is away: the deletion, then a new message, then an edit of that message,
    // which can only apply once the message is archived.
    await change(deleted(key, ['m27']));
    const chat = await handlers.onMessage({
      ...asked(key, 'my card is 4111-1111', 'x1'),
      mentionsBot: false,
    });
    expect(chat?.archived).toBe('spooled');
    await change({
      kind: 'edited',
      platform: 'web',
      channelKey: key,
      platformMessageId: 'x1',
      text: 'my card is in the vault',
      ts: new Date().toISOString(),
    });
    expect(logger.events('message.change_spooled')).toHaveLength(2);
    expect(logger.events('message.deleted')).toEqual([]);

    world.proxy.restore();
    await vi.waitFor(() => expect(logger.events('spool.replayed')).toHaveLength(1), { timeout: 20_000 });
    const archive = await world.channels.readArchive(key, 27, 40);
    expect(archive.map((m) => [m.seq, m.text])).toEqual([
      [27, REDACTED_MESSAGE],
      [28, expect.stringContaining('message 28')],
      [29, expect.stringContaining('message 29')],
      [30, expect.stringContaining('message 30')],
      [31, 'my card is in the vault'],
    ]);
    expect(logger.events('message.deleted')[0]?.fields).toMatchObject({ outcome: 'applied', messages: 1 });
    expect(logger.events('message.edited')[0]?.fields).toMatchObject({ outcome: 'applied', raw: 1 });
    const view = await world.expectConsistentTokens(key);
    expect(JSON.stringify(view.raw)).not.toContain('4111');
    expect(JSON.stringify(view.raw)).not.toContain(FACT);
    await bot.takeBacksIdle();
  });

  it('heals a summary set aside whose take-back was cut off with its process, at the next start', async () => {
    const key = 'web:del4';
    await world.plant(key);
    // What a bot that stopped right after a deletion leaves: tombstones, and the summary set aside.
    const { change, bot: first } = await startBot();
    world.fake.reply(async (request) =>
      isSummary(request) ? new Promise(() => {}) : carelessModel(request),
    );
    closers.push(async () => world.fake.reply(carelessModel));
    await change(deleted(key, ['m4']));
    expect(
      (await world.channels.loadPrefix(key)).spans.map((s) => (s.kind === 'summary' ? s.text : '')),
    ).toEqual([PENDING_SUMMARY]);
    await first.stop(0);
    world.fake.reply(carelessModel);

    // The stop gave its claim up: the next process's first sweep finishes the take-back.
    const { bot, logger } = await startBot();
    await bot.takeBacksIdle();
    expect(logger.events('takeback.completed')[0]?.fields).toMatchObject({ channel: key, summaries: 1 });
    const [span] = (await world.channels.loadPrefix(key)).spans;
    expect(span?.kind === 'summary' && span.text !== PENDING_SUMMARY && span.text.length > 0).toBe(true);
    expect(JSON.stringify(span)).not.toContain(FACT);
  });

  it('reaches a second replica holding the channel in its cache, on a redelivery too', async () => {
    const key = 'web:rep1';
    await world.plant(key);
    // Replica B caches the channel (its raw messages hold the fact at seq 27); no notice reaches it
    // (a notifier of its own: as if Redis dropped the notice).
    const { bot: a, change } = await startBot();
    const { handlers: b } = await startBot();
    await b.onMessage(asked(key, '@ebb good morning', 'r0'));
    await change(deleted(key, ['m4', 'm27']));
    await a.takeBacksIdle();
    // A message another replica archived and died before answering: B gets its redelivery.
    const tokenizer = await loadTokenizer('o200k_base');
    await world.channels.append(key, {
      ...toNewMessage(
        { role: 'user', author: 'ana', text: '@ebb what was the code again?' },
        tokenizer,
        1_000,
      ),
      platformMessageId: 'r1',
    });
    const before = world.fake.requests.length;
    const turn = await b.onMessage(asked(key, '@ebb what was the code again?', 'r1'));
    expect(turn?.reply).not.toBeNull();
    const prompt = world.fake.requests.slice(before).find((r) => !isSummary(r));
    expect(JSON.stringify(prompt?.body)).toContain('what was the code again?');
    for (const m of prompt?.body.messages ?? [])
      if (JSON.stringify(m).includes(FACT)) console.log('HOLDS', JSON.stringify(m).slice(0, 3000));
    expect(JSON.stringify(prompt?.body)).not.toContain(FACT);
  });

  it('is ignored where [privacy] on_delete = "ignore"', async () => {
    const key = 'web:del2';
    await world.plant(key);
    const { logger, change } = await startBot(
      `${world.toml}[channels."web:del2".privacy]\non_delete = "ignore"\n`,
    );
    const before = await world.whereIsTheFact(key);
    await change(deleted(key, ['m4']));
    expect(logger.events('message.deleted')[0]?.fields).toMatchObject({ outcome: 'ignored', messages: 0 });
    expect(await world.whereIsTheFact(key)).toEqual(before);
  });
});

describe('an edit', () => {
  it('keeps only the new text in the archive and the raw context, its tokens counted again', async () => {
    const key = 'web:edit1';
    await world.plant(key);
    const { logger, change } = await startBot();
    const before = await world.expectConsistentTokens(key);
    const edit = (id: string, text: string): MessageChange => ({
      kind: 'edited',
      platform: 'web',
      channelKey: key,
      platformMessageId: id,
      text,
      ts: new Date().toISOString(),
    });
    await change(edit('m27', 'again, it is in the password manager, ask me'));
    expect(logger.events('message.edited')[0]?.fields).toMatchObject({
      outcome: 'applied',
      messages: 1,
      raw: 1,
    });
    const [archived] = await world.channels.readArchive(key, 27, 27);
    expect(archived?.text).toBe('again, it is in the password manager, ask me');
    const view = await world.expectConsistentTokens(key);
    const raw = view.raw.find((m) => m.seq === 27);
    expect(raw?.text).toContain('again, it is in the password manager, ask me');
    expect(JSON.stringify(view.raw)).not.toContain(FACT);
    expect(view.generation).toBe(before.generation + 1);
    expect(view.tokens - before.tokens).toBe(
      (raw?.tokens ?? 0) - (before.raw.find((m) => m.seq === 27)?.tokens ?? 0),
    );
    // With on_edit = "update" the summary holding seq 4 is not written again.
    await change(edit('m4', 'remember this: the vault code is in the manager'));
    expect(logger.events('message.edited')[1]?.fields).toMatchObject({
      outcome: 'applied',
      raw: 0,
      summaries: 0,
    });
    expect((await world.whereIsTheFact(key)).activeSpans).toBe(1);
    expect((await world.whereIsTheFact(key)).messages).toBe(0);
  });

  it('with on_edit = "resummarize" writes the summaries holding the old text again from the new', async () => {
    const key = 'web:edit2';
    await world.plant(key);
    const { bot, logger, change } = await startBot(`${world.toml}[privacy]\non_edit = "resummarize"\n`);
    await change({
      kind: 'edited',
      platform: 'web',
      channelKey: key,
      platformMessageId: 'm4',
      text: 'remember this: the vault code is in the manager',
      ts: new Date().toISOString(),
    });
    expect(logger.events('message.edited')[0]?.fields).toMatchObject({
      outcome: 'applied',
      summaries: 1,
      memories: 1,
    });
    await bot.takeBacksIdle();
    const where = await world.whereIsTheFact(key);
    expect(where).toMatchObject({ memories: 0, activeSpans: 0, retiredSpans: 0, compactionRuns: 0 });
    // Seq 27 still says it: an edit of seq 4 reaches seq 4 only.
    expect(where.messages).toBe(1);
    const [span] = (await world.channels.loadPrefix(key)).spans;
    expect(span?.kind === 'summary' ? span.text : '').toContain('in the manager');
  });
});

describe('a change that names no thread (Slack sent no thread_ts and no previous_message)', () => {
  /** The deletion as such an event reads: its channel's key, the thread unknown. */
  const unplaced = (channelKey: string, ids: string[]): MessageChange => ({
    ...deleted(channelKey, ids),
    threadUnknown: true,
  });

  it("waits behind the thread's turn in flight, so the reply that turn archives goes with the message", async () => {
    const channel = 'web:order1';
    const thread = `${channel}:1700000000.000100`;
    const { logger, handlers, change } = await startBot();
    const looked = vi.spyOn(world.channels, 'findInThreads');
    closers.push(async () => looked.mockRestore());
    // The model's answer to the fact is held until the deletion has found the thread.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let answering: () => void = () => {};
    const modelAsked = new Promise<void>((resolve) => {
      answering = resolve;
    });
    world.fake.enqueue(async (request) => {
      answering();
      await held;
      return carelessModel(request);
    });
    closers.push(async () => release());

    const turn = handlers.onMessage(asked(thread, `remember this: the vault code is ${FACT}`, 'o1'));
    await modelAsked;
    const deletion = change(unplaced(channel, ['o1']));
    await vi.waitFor(() => expect(looked.mock.settledResults[0]?.type).toBe('fulfilled'));
    expect(await looked.mock.results[0]?.value).toEqual([{ channelKey: thread, platformMessageId: 'o1' }]);
    release();
    expect((await turn)?.reply).toContain(FACT);
    await deletion;

    expect(logger.events('message.deleted').map((e) => e.fields)).toEqual([
      expect.objectContaining({ channel: thread, outcome: 'applied', messages: 2, replies: 1 }),
    ]);
    expect(await world.whereIsTheFact(thread)).toMatchObject({ messages: 0 });
  });

  it('during a Postgres outage is spooled under the channel, then applied in the thread after it', async () => {
    const channel = 'web:out2';
    const thread = `${channel}:1700000000.000100`;
    await world.plant(thread);
    const spool = new FileInboundSpool(join(mkdtempSync(join(tmpdir(), 'ebb-changes-')), 'spool.jsonl'));
    const { logger, change } = await startBot(world.toml, { spool });
    world.proxy.cut();
    closers.push(async () => world.proxy.restore());

    await change(unplaced(channel, ['m27']));
    expect(logger.events('message.change_spooled').map((e) => e.fields.channel)).toEqual([channel]);
    expect(logger.events('message.deleted')).toEqual([]);

    world.proxy.restore();
    await vi.waitFor(() => expect(logger.events('message.deleted')).toHaveLength(1), { timeout: 20_000 });
    expect(logger.events('message.deleted')[0]?.fields).toMatchObject({
      channel: thread,
      outcome: 'applied',
      messages: 1,
    });
    const [said] = await world.channels.readArchive(thread, 27, 27);
    expect(said?.text).toBe(REDACTED_MESSAGE);
  });
});
