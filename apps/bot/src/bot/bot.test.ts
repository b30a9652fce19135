/**
 * The bot's turn decisions against in-memory stores, the in-process queue and a recording platform
 * (a port implementation; the real adapters are tested against fake Slack and Discord servers).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig, resolveChannel } from '@ebb/config';
import type {
  ChatMessage,
  ChatModel,
  CompactionLogEvent,
  InboundMessage,
  PlatformAdapter,
  PlatformHandlers,
  UsageStore,
} from '@ebb/core';
import {
  InMemoryChannelStore,
  InMemoryMemoryStore,
  InMemoryRunStore,
  InMemoryUsageStore,
} from '@ebb/core/testing';
import { LlmError } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { Toolbox } from '@ebb/tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Bot } from './bot.js';
import { FileInboundSpool } from './file-inbound-spool.js';
import { STOPPING_APOLOGY } from './message-turns.js';

class RecordingPlatform implements PlatformAdapter {
  readonly platform = 'slack' as const;
  readonly sent: { key: string; text: string }[] = [];
  /** Pauses, sends and stops, in order. */
  readonly lifecycle: string[] = [];
  handlers: PlatformHandlers | undefined;
  /** Starts each posted message's platform id: bots posting into one store need their own. */
  constructor(readonly ids = 'out') {}
  async start(handlers: PlatformHandlers) {
    this.handlers = handlers;
  }
  async send(key: string, text: string) {
    this.sent.push({ key, text });
    this.lifecycle.push('send');
    return { platformMessageId: `${this.ids}-${this.sent.length}` };
  }
  async typing() {}
  async pause() {
    this.lifecycle.push('pause');
  }
  async stop() {
    this.lifecycle.push('stop');
  }
}

class RecordingModel implements ChatModel {
  readonly label = 'recording';
  readonly prompts: (readonly ChatMessage[])[] = [];
  /** The next calls refuse the prompt as too long, as a provider does. */
  overflows = 0;
  /** Every call is refused (a revoked key). */
  refusing = false;
  async reply(messages: readonly ChatMessage[]) {
    this.prompts.push(messages);
    if (this.refusing) throw new LlmError('invalid api key', { code: 'llm_auth', retryable: false });
    if (this.overflows > 0) {
      this.overflows--;
      throw new LlmError('maximum context length exceeded', {
        code: 'llm_context_overflow',
        retryable: false,
      });
    }
    return { text: `answer ${this.prompts.length}` };
  }
}

const KEY = 'slack:T1:C1';
let n = 0;
const inbound = (fields: Partial<InboundMessage> = {}): InboundMessage => ({
  platform: 'slack',
  channelKey: KEY,
  platformMessageId: `m${++n}`,
  authorId: 'U1',
  authorName: 'ana',
  fromBot: false,
  text: 'the deploy is done',
  ts: new Date().toISOString(),
  mentionsBot: false,
  direct: false,
  ...fields,
});

describe('Bot turns', () => {
  let platform: RecordingPlatform;
  let model: RecordingModel;
  let channels: InMemoryChannelStore;
  let handlers: PlatformHandlers;
  let bot: Bot;
  let log: RecordingLogger;

  beforeEach(async () => {
    platform = new RecordingPlatform();
    model = new RecordingModel();
    channels = new InMemoryChannelStore();
    log = new RecordingLogger();
    const config = parseConfig(
      '[slack]\nadmins = ["U-admin"]\n[compaction]\nmessage_max_tokens = 500\n',
      'bot-test.toml',
    );
    bot = new Bot({
      config: () => config,
      channels,
      memories: new InMemoryMemoryStore(),
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => model,
      logger: log,
    });
    await bot.start([platform]);
    handlers = platform.handlers as PlatformHandlers;
  });

  it('archives but does not answer a message that does not mention it (respond_to = mentions)', async () => {
    expect(await handlers.onMessage(inbound())).toEqual({ reply: null, archived: 'stored' });
    expect(platform.sent).toEqual([]);
    expect((await channels.loadContext(KEY)).headSeq).toBe(1);
  });

  it('answers a mention and a DM, posts once, and archives the reply', async () => {
    expect(await handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb status?' }))).toEqual({
      reply: 'answer 1',
      archived: 'stored',
    });
    expect(await handlers.onMessage(inbound({ direct: true, channelKey: 'slack:T1:D1' }))).toEqual({
      reply: 'answer 2',
      archived: 'stored',
    });
    expect(platform.sent).toEqual([
      { key: KEY, text: 'answer 1' },
      { key: 'slack:T1:D1', text: 'answer 2' },
    ]);
    const context = await channels.loadContext(KEY);
    expect(context.raw.map((m) => [m.role, m.text])).toEqual([
      ['user', '@ebb status?'],
      ['assistant', 'answer 1'],
    ]);
    // The prompt ends with the message being answered, speaker named.
    expect(model.prompts[0]?.at(-1)).toEqual({ role: 'user', content: 'ana: @ebb status?' });
    // A model that reports no token counts is named by its own label, and nothing is priced.
    const answered = log
      .events('turn.answered')
      .map(({ fields: f }) => [f.model, f.calls, f.promptTokens, f.costUsd]);
    expect(answered).toEqual([
      ['recording', 1, null, null],
      ['recording', 1, null, null],
    ]);
  });

  it("logs a turn's failures bound to its channel", async () => {
    model.refusing = true;
    const result = await handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb status?' }));
    expect(result).toMatchObject({ archived: 'stored' });
    const failed = log.events('turn.model_failed');
    expect(failed).toEqual([
      {
        level: 'error',
        fields: {
          channel: KEY,
          event: 'turn.model_failed',
          err: expect.objectContaining({ code: 'llm_auth' }),
          code: 'llm_auth',
          failedTries: undefined,
        },
        message: 'model call failed: the server refused the key; check OPENAI_API_KEY',
      },
    ]);
  });

  it('truncates and retries when the provider says the prompt is too long', async () => {
    for (let i = 0; i < 30; i++) await handlers.onMessage(inbound({ text: `status line ${i}` }));
    model.overflows = 1;
    expect(await handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb summary?' }))).toEqual({
      reply: 'answer 2',
      archived: 'stored',
    });
    const [refused, retried] = model.prompts;
    // The retry went out smaller, with the marker in place of the oldest messages.
    expect(retried?.length).toBeLessThan(refused?.length ?? 0);
    expect(JSON.stringify(retried)).toContain('Earlier messages were set aside');
    expect((await channels.loadContext(KEY)).spans.map((s) => s.kind)).toEqual(['truncated']);
  });

  it('answers with a short apology when the model fails for good, and archives it', async () => {
    const failing: ChatModel = {
      label: 'down',
      reply: async () => {
        throw new LlmError('upstream down', { code: 'llm_server', retryable: true });
      },
    };
    model.reply = failing.reply;
    const result = await handlers.onMessage(inbound({ mentionsBot: true }));
    expect(result?.reply).toMatch(/model I use isn't answering/);
    expect(platform.sent).toHaveLength(1);
    expect((await channels.loadContext(KEY)).raw.at(-1)).toMatchObject({ role: 'assistant' });
  });

  it('tells a sender that reports failures (the web API) that the model failed, without an apology as the reply', async () => {
    model.reply = async () => {
      throw new LlmError('upstream down', { code: 'llm_server', retryable: true });
    };
    const result = await handlers.onMessage(inbound({ mentionsBot: true, reportsFailure: true }));
    expect(result).toEqual({ reply: null, archived: 'stored', failedAfterStore: true });
    expect(platform.sent).toEqual([]);
    const raw = (await channels.loadContext(KEY)).raw;
    expect(raw.map((m) => m.role)).toEqual(['user']);
  });

  it('stops in the order that loses nothing: intake paused, turns in hand answered, then disconnected', async () => {
    let release = () => {};
    let asked = () => {};
    const modelAsked = new Promise<void>((resolve) => (asked = resolve));
    model.reply = async () => {
      asked();
      await new Promise<void>((resolve) => (release = resolve));
      return { text: 'late answer' };
    };
    const turn = handlers.onMessage(inbound({ mentionsBot: true }));
    const queued = handlers.onMessage(inbound({ text: 'queued behind it' }));
    await modelAsked;
    const stopping = bot.stop(5_000);
    // While the model is still answering, the adapter is paused, not stopped.
    await vi.waitFor(() => expect(platform.lifecycle).toEqual(['pause']));
    release();
    await stopping;
    expect(await turn).toEqual({ reply: 'late answer', archived: 'stored' });
    expect(await queued).toEqual({ reply: null, archived: 'stored' });
    expect(platform.lifecycle).toEqual(['pause', 'send', 'stop']);
    expect((await channels.loadContext(KEY)).raw.map((m) => m.text)).toEqual([
      'the deploy is done',
      'late answer',
      'queued behind it',
    ]);
  });

  it('never answers a bot, even when mentioned or in a DM', async () => {
    expect(await handlers.onMessage(inbound({ fromBot: true, mentionsBot: true, direct: true }))).toEqual({
      reply: null,
      archived: 'stored',
    });
    expect(platform.sent).toEqual([]);
    expect((await channels.loadContext(KEY)).headSeq).toBe(1);
  });

  it('handles a redelivered message (same platform id) once, and says what it was first', async () => {
    const message = inbound({ mentionsBot: true });
    expect(await handlers.onMessage(message)).toEqual({ reply: 'answer 1', archived: 'stored' });
    expect(await handlers.onMessage(message)).toEqual({
      reply: null,
      archived: 'duplicate',
      original: { text: 'the deploy is done', reply: 'answer 1' },
    });
    expect(platform.sent).toHaveLength(1);
    expect((await channels.loadContext(KEY)).headSeq).toBe(2);
  });

  it('archives an oversized message whole while the context holds a clipped copy', async () => {
    const text = `build log: ${'step ok, cache hit, 12 ms; '.repeat(200)}`;
    await handlers.onMessage(inbound({ text }));
    const [archived] = await channels.readArchive(KEY, 1, 1);
    expect(archived?.text).toBe(text);
    const [inContext] = (await channels.loadContext(KEY)).raw;
    expect(inContext?.omittedTokens).toBeGreaterThan(0);
    expect(inContext?.text.length).toBeLessThan(text.length);
  });

  it('drops NUL characters, which Postgres cannot store, and keeps the rest', async () => {
    await handlers.onMessage(inbound({ text: 'a\u0000b', authorName: 'an\u0000a' }));
    const [archived] = await channels.readArchive(KEY, 1, 1);
    expect(archived).toMatchObject({ text: 'ab', author: 'ana' });
  });

  it('runs turns of one channel in order, and restricts /compact to admins', async () => {
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => handlers.onMessage(inbound({ mentionsBot: true, text: `q${i}` }))),
    );
    expect(results.map((r) => r?.reply)).toEqual([
      'answer 1',
      'answer 2',
      'answer 3',
      'answer 4',
      'answer 5',
    ]);
    const texts = (await channels.loadContext(KEY)).raw.map((m) => m.text);
    expect(texts).toEqual([
      'q0',
      'answer 1',
      'q1',
      'answer 2',
      'q2',
      'answer 3',
      'q3',
      'answer 4',
      'q4',
      'answer 5',
    ]);
    const command = { platform: 'slack' as const, channelKey: KEY, args: '' };
    expect(await handlers.onCommand({ ...command, name: 'compact', userId: 'U-someone' })).toMatch(
      /^Only the admins/,
    );
    expect(await handlers.onCommand({ ...command, name: 'compact', userId: 'U-admin' })).toMatch(
      /^(Compaction queued|Nothing to compact)/,
    );
    expect(await handlers.onCommand({ ...command, name: 'context', userId: 'U-someone' })).toMatch(
      /^Context of slack:T1:C1: ▕/,
    );
  });
});

describe('Bot turns: what they cost', () => {
  const priced = parseConfig(
    '[llm]\nmodel = "gpt-5.4-mini"\n[prices."gpt-5.4-mini"]\ninput_per_mtok = 0.75\ncached_input_per_mtok = 0.075\noutput_per_mtok = 4.5\n',
    'bot-usage.toml',
  );
  const counted: ChatModel = {
    label: 'gpt-5.4-mini',
    reply: async () => ({ text: 'ok', promptTokens: 2_000, cachedPromptTokens: 1_920, completionTokens: 10 }),
  };
  const start = async (usage: UsageStore, now?: () => number) => {
    const platform = new RecordingPlatform();
    const log = new RecordingLogger();
    const bot = new Bot({
      ...(now === undefined ? {} : { now }),
      config: () => priced,
      channels: new InMemoryChannelStore(),
      memories: new InMemoryMemoryStore(),
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => counted,
      logger: log,
      usage,
    });
    await bot.start([platform]);
    return { handlers: platform.handlers as PlatformHandlers, log };
  };

  it('logs the turn’s tokens and cost and records them for the channel', async () => {
    const usage = new InMemoryUsageStore();
    const { handlers, log } = await start(usage);
    await handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb cost?' }));
    expect(log.events('turn.answered').map((e) => e.fields)).toEqual([
      expect.objectContaining({
        model: 'gpt-5.4-mini',
        promptTokens: 2_000,
        cachedTokens: 1_920,
        completionTokens: 10,
        costUsd: expect.closeTo((80 * 0.75 + 1_920 * 0.075 + 10 * 4.5) / 1e6, 12),
      }),
    ]);
    await vi.waitFor(async () =>
      expect(await usage.totalsSince(new Date(0), [KEY])).toEqual([
        {
          channelKey: KEY,
          purpose: 'reply',
          model: 'gpt-5.4-mini',
          calls: 1,
          promptTokens: 2_000,
          cachedTokens: 1_920,
          completionTokens: 10,
          replies: 1,
          coldReplies: 1,
        },
      ]),
    );
  });

  it('counts a reply as cold after a silence longer than the cache lifetime since the last reply', async () => {
    // gpt-5.4-mini: a day's retention by default, so a day's lifetime.
    const usage = new InMemoryUsageStore();
    let now = Date.parse('2026-12-01T09:00:00Z');
    const { handlers, log } = await start(usage, () => now);
    const ask = async (text: string, later: number) => {
      now += later;
      await handlers.onMessage(inbound({ mentionsBot: true, text }));
    };
    await ask('@ebb first', 0); // no reply before it: cold
    await ask('@ebb an hour on', 3_600_000); // warm
    await ask('@ebb a day on', 86_460_000); // a day and a minute after the reply an hour in
    await ask('@ebb right after', 1_000); // warm
    expect(log.events('turn.answered').map((e) => e.fields.cacheCold)).toEqual([true, false, true, false]);
    await vi.waitFor(async () =>
      expect(await usage.totalsSince(new Date(0), [KEY])).toEqual([
        expect.objectContaining({ replies: 4, coldReplies: 2 }),
      ]),
    );
  });

  it('answers even when the usage cannot be recorded, and says so once in the log', async () => {
    const { handlers, log } = await start({
      record: () => Promise.reject(new Error('database is away')),
      totalsSince: async () => [],
      totalsIn: async () => [],
    });
    expect(await handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb cost?' }))).toMatchObject({
      reply: 'ok',
      archived: 'stored',
    });
    await vi.waitFor(() => expect(log.events('usage.record_failed')).toHaveLength(1));
  });
});

describe('Bot on a channel whose cache went cold', () => {
  const config = parseConfig(
    '[llm]\nmodel = "gpt-5.4-mini"\ncontext_window = 4000\nmax_output_tokens = 400\n',
    'bot-silence.toml',
  );
  const ttlMs = 1000 * resolveChannel(config, KEY).llm.cacheTtlSeconds;
  const words = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');

  /**
   * A bot on `channels` whose clock is `clock()`, checking for cold caches every 5 ms (real time);
   * `name` starts the platform ids of what it posts (replicas on one store need their own).
   */
  async function coldBot(channels: InMemoryChannelStore, clock: () => number, name = 'out') {
    const events: CompactionLogEvent[] = [];
    const usages = new Map<string, number>();
    let turns = 0;
    const platform = new RecordingPlatform(name);
    const bot = new Bot({
      config: () => config,
      channels,
      memories: new InMemoryMemoryStore(),
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => new RecordingModel(),
      logger: new RecordingLogger(),
      onEvent: (e) => events.push(e),
      onTurn: (t) => {
        turns++;
        usages.set(t.channel, t.usage);
      },
      now: clock,
      cacheSilenceCheckMs: 5,
    });
    await bot.start([platform]);
    const handlers = platform.handlers as PlatformHandlers;
    const triggered = () => events.filter((e) => e.event === 'compaction.triggered');
    return { bot, handlers, usages, triggered, turns: () => turns };
  }

  it('queues the pass a channel near its threshold would need once its cache has let the prompt go', async () => {
    let now = Date.parse('2026-12-01T09:00:00Z');
    const { bot, handlers, usages, triggered, turns } = await coldBot(new InMemoryChannelStore(), () => now);
    // Up to 0.75 of the background threshold (0.8), under it: no pass is due after any turn.
    while ((usages.get(KEY) ?? 0) < 0.62) {
      now += 60_000;
      await handlers.onMessage(inbound({ mentionsBot: true, text: `@ebb ${words}` }));
    }
    expect(usages.get(KEY)).toBeLessThan(0.8);
    // Within the lifetime the checks find nothing: a check runs every 5 ms on the real clock.
    now += ttlMs - 1_000;
    const warmChecks = turns();
    await handlers.onMessage(inbound({ text: 'still warm' })); // archived, not answered: no prompt
    expect(turns()).toBe(warmChecks + 1);
    expect(triggered()).toEqual([]);
    now += 2_000; // the lifetime has run out since the last reply
    await vi.waitFor(() =>
      expect(triggered()).toMatchObject([{ channel: KEY, tier: 'background', reason: 'cache_cold' }]),
    );
    await bot.stop();
  });

  it('judges on the store, so a reply by another replica since keeps the channel warm', async () => {
    let now = Date.parse('2026-12-01T09:00:00Z');
    const channels = new InMemoryChannelStore();
    const a = await coldBot(channels, () => now, 'a');
    const b = await coldBot(channels, () => now, 'b');
    // Replica A fills two channels; CONTROL only ever hears from A, so its cache goes cold.
    const CONTROL = 'slack:T1:C2';
    for (const channelKey of [KEY, CONTROL]) {
      while ((a.usages.get(channelKey) ?? 0) < 0.62) {
        now += 60_000;
        await a.handlers.onMessage(inbound({ channelKey, mentionsBot: true, text: `@ebb ${words}` }));
      }
    }
    // Half a lifetime on, replica B answers in KEY: A's cached copy of KEY never sees that reply.
    now += ttlMs / 2;
    await b.handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb one more' }));
    // A lifetime after A's last replies, half a lifetime after B's.
    now += ttlMs / 2 + 60_000;
    // A checks both channels at once: CONTROL's pass is the proof KEY was judged too.
    await vi.waitFor(() => expect(a.triggered()).toMatchObject([{ channel: CONTROL, reason: 'cache_cold' }]));
    expect(a.triggered().filter((e) => e.channel === KEY)).toEqual([]);
    expect(b.triggered()).toEqual([]);
    await Promise.all([a.bot.stop(), b.bot.stop()]);
  });
});

describe('Bot turns with tools', () => {
  /** The archive takes the user's message, then fails on the tool step (Postgres gone mid-loop). */
  class FailingStepStore extends InMemoryChannelStore {
    override async appendAll(): Promise<never> {
      throw new Error('connection terminated');
    }
  }

  it('reports an archive that fails mid-loop as the turn failing, not as the model', async () => {
    const platform = new RecordingPlatform();
    const log = new RecordingLogger();
    // A built-in's name (config allows built-ins and server.tool names), any behaviour.
    const echo = {
      spec: { name: 'read_history', description: 'Says it back.', parameters: { type: 'object' } },
      call: async () => ({ text: 'echoed', isError: false }),
    };
    const bot = new Bot({
      config: () => parseConfig('[tools]\nallow = ["read_history"]\n', 'bot-tools.toml'),
      channels: new FailingStepStore(),
      memories: new InMemoryMemoryStore(),
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => ({
        label: 'calls echo',
        reply: async () => ({ text: '', toolCalls: [{ id: 'c1', name: 'read_history', arguments: '{}' }] }),
      }),
      toolbox: new Toolbox({ builtIns: [echo] }),
      logger: log,
    });
    await bot.start([platform]);
    const result = await platform.handlers?.onMessage(inbound({ mentionsBot: true, text: '@ebb echo?' }));
    expect(result).toMatchObject({ archived: 'stored', failedAfterStore: true });
    expect(log.entries.map((e) => e.message)).toContain('turn failed');
    expect(log.events('turn.model_failed')).toEqual([]);
    expect(platform.sent.map((s) => s.text)).toEqual([expect.stringMatching(/^Sorry/)]);
    await bot.stop();
  });
});

describe('Bot stopping past its grace period', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ebb-bot-stop-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** A model that answers only once its call is aborted (a slow provider), and says when it is asked. */
  function hangingModel(): { model: ChatModel; asked: Promise<void> } {
    let asked = () => {};
    const askedOnce = new Promise<void>((resolve) => (asked = resolve));
    const model: ChatModel = {
      label: 'hanging',
      reply: (_messages, options) =>
        new Promise((_resolve, reject) => {
          asked();
          options?.signal?.addEventListener(
            'abort',
            () => reject(new LlmError('aborted', { code: 'llm_aborted', retryable: false })),
            { once: true },
          );
        }),
    };
    return { model, asked: askedOnce };
  }

  async function startBot(model: ChatModel, spool?: FileInboundSpool) {
    const platform = new RecordingPlatform();
    const channels = new InMemoryChannelStore();
    const log = new RecordingLogger();
    const bot = new Bot({
      config: () => parseConfig('', 'bot-stop.toml'),
      channels,
      memories: new InMemoryMemoryStore(),
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => model,
      logger: log,
      ...(spool === undefined ? {} : { spool }),
    });
    await bot.start([platform]);
    return { bot, platform, channels, log, handlers: platform.handlers as PlatformHandlers };
  }

  it('cuts the running model call off, refuses a reporting sender, spools a chat message, then disconnects', async () => {
    const { model, asked } = hangingModel();
    const spool = new FileInboundSpool(join(dir, 'spool.jsonl'));
    const { bot, platform, channels, log, handlers } = await startBot(model, spool);
    const running = handlers.onMessage(inbound({ mentionsBot: true, text: '@ebb the long question' }));
    const chat = [1, 2, 3].map((i) => handlers.onMessage(inbound({ text: `queued chat ${i}` })));
    const web = handlers.onMessage(inbound({ text: 'queued web', reportsFailure: true }));
    await asked;
    await bot.stop(50);

    // The running turn's message is kept; its channel is told, and the apology archived after it.
    expect(await running).toEqual({ reply: STOPPING_APOLOGY, archived: 'stored' });
    expect((await channels.loadContext(KEY)).raw.map((m) => m.text)).toEqual([
      '@ebb the long question',
      STOPPING_APOLOGY,
    ]);
    // Acknowledged to the platform before: kept for the next start, in the order it came.
    expect(await Promise.all(chat)).toEqual([1, 2, 3].map(() => ({ reply: null, archived: 'spooled' })));
    expect(
      (await spool.peek(KEY, 10)).map((e) => ('text' in e.message ? e.message.text : e.message.change)),
    ).toEqual(['queued chat 1', 'queued chat 2', 'queued chat 3']);
    // The web API's sender is told to send it again: nothing of it is kept.
    expect(await web).toEqual({ reply: null, archived: 'refused' });
    // All of it settled before the adapter stopped (so its answers could still go out).
    expect(platform.lifecycle).toEqual(['pause', 'send', 'stop']);
    expect(log.events('turn.cut_off')).toHaveLength(1);
    expect(log.events('turn.model_failed')).toEqual([]);
    expect(log.events('shutdown.grace_expired')).toMatchObject([
      { level: 'warn', fields: { channels: 1, refused: 4 } },
    ]);
  });

  it('without a spool, says a chat message it could not keep is lost, once, and tells its channel', async () => {
    const { model, asked } = hangingModel();
    const { bot, platform, log, handlers } = await startBot(model);
    const running = handlers.onMessage(inbound({ mentionsBot: true }));
    const queued = handlers.onMessage(inbound({ text: 'queued chat' }));
    await asked;
    await bot.stop(50);
    expect(await running).toMatchObject({ archived: 'stored' });
    expect(await queued).toEqual({ reply: null, archived: 'failed' });
    expect(log.events('shutdown.message_dropped')).toMatchObject([
      { level: 'error', fields: { channel: KEY } },
    ]);
    expect(platform.sent.map((s) => s.text)).toEqual([STOPPING_APOLOGY, STOPPING_APOLOGY]);
  });
});
