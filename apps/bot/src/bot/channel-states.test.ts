/**
 * A pass that lands while a turn is running: the bot's cache (`ChannelStates`), its compaction
 * (`BotCompaction`, `ChannelCompactor`) and the real compaction processor on the in-process queue,
 * with in-memory stores. The model takes its time, as real ones do, and the pass in flight lands
 * during its reply, so the context-changed notification arrives mid-turn.
 */

import { createCompactionProcessor } from '@ebb/compaction';
import { parseConfig, resolveChannel } from '@ebb/config';
import {
  type Calibration,
  type ChatModel,
  type CompactionLogEvent,
  FencedAppendError,
  type InboundMessage,
  type PlatformHandlers,
  type SummarizeInput,
  type Summarizer,
  type SummaryOutput,
  WorkingContext,
} from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { ExtractiveSummarizer, loadTokenizer } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CountingStore, comparable, toolStep } from '../../test/counting-channel-store.js';
import { RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';
import { type AppendedMessage, ChannelStates } from './channel-states.js';

const KEY = 'slack:T1:C1';
const tokenizer = await loadTokenizer('o200k_base');

/** The extractive summary, answered only while the gate is open (passes stay in flight until then). */
class GatedSummarizer implements Summarizer {
  readonly #inner = new ExtractiveSummarizer({ tokenizer });
  #open = false;
  #waiting: (() => void)[] = [];

  async summarize(input: SummarizeInput): Promise<SummaryOutput> {
    const output = await this.#inner.summarize(input);
    if (!this.#open) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    return output;
  }

  open(): void {
    this.#open = true;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  close(): void {
    this.#open = false;
  }
}

describe('a pass that lands while a turn is running', () => {
  // The clock moves at chat pace (a message every 3 s, replies taking 1.5 s); timers stay real.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-11-23T09:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is judged on the context before its splice and after it, so a busy channel keeps compacting', async () => {
    // Small passes (10% of the context) that help, in a channel that stays over the background
    // threshold after each one lands: only their judgement keeps the channel compacting.
    const config = parseConfig(
      [
        '[llm]',
        'context_window = 4000',
        'max_output_tokens = 500',
        'encoding = "o200k_base"',
        '[compaction]',
        'background_threshold = 0.6',
        'aggressive_threshold = 0.9',
        'background_fraction = 0.1',
        'summary_max_tokens = 40',
        'protect_recent = 4',
        'cooldown_seconds = 0',
        '[memory]',
        'recall_max_tokens = 0',
      ].join('\n'),
      'mid-turn.toml',
    );
    const channels = new InMemoryChannelStore();
    const runs = new InMemoryRunStore();
    const memories = new InMemoryMemoryStore();
    const notifier = new InProcessContextNotifier();
    const summarizer = new GatedSummarizer();
    const processor = createCompactionProcessor({
      channels,
      memories,
      runs,
      takeBacks: channels.takeBacks,
      notifier,
      settingsFor: async () => ({ summaryMaxTokens: 40, memoryScope: 'channel', tokenizer, summarizer }),
    });
    const queue = new InlineCompactionQueue({ processor });
    const passesInFlight = async () => (await queue.inFlight(KEY)).filter((p) => p.tier !== 'emergency');
    /** The next pass to end: how it ended. */
    const passEnded = () =>
      new Promise<'completed' | 'failed'>((resolve) => {
        const completed = () => end('completed');
        const failed = () => end('failed');
        const end = (how: 'completed' | 'failed') => {
          queue.off('completed', completed);
          queue.off('failed', failed);
          resolve(how);
        };
        queue.on('completed', completed);
        queue.on('failed', failed);
      });
    /** Passes that landed while the model was answering. */
    let landedMidTurn = 0;
    /** The model answers once the passes in flight have landed: their notifications arrive mid-turn. */
    const model: ChatModel = {
      label: 'slow',
      reply: async () => {
        vi.setSystemTime(Date.now() + 1_500);
        summarizer.open();
        for (;;) {
          const ended = passEnded();
          if ((await queue.inFlight(KEY)).length === 0) break;
          if ((await ended) === 'completed') landedMidTurn++;
        }
        summarizer.close();
        return { text: 'noted' };
      },
    };
    const events: CompactionLogEvent[] = [];
    /** Usage after each answered turn: after the landing. */
    const afterLanding: number[] = [];
    const bot = new Bot({
      config: () => config,
      channels,
      memories,
      runs,
      queue,
      notifier,
      chatModel: () => model,
      logger: new RecordingLogger(),
      onEvent: (e) => events.push(e),
      onTurn: (turn) => {
        if (turn.answered) afterLanding.push(turn.usage);
      },
    });
    const platform = new RecordingPlatform('slack');
    await bot.start([platform]);
    const handlers = platform.handlers as PlatformHandlers;
    let n = 0;
    const say = (fields: Partial<InboundMessage> = {}) => {
      vi.setSystemTime(Date.now() + 3_000);
      return handlers.onMessage({
        platform: 'slack',
        channelKey: KEY,
        platformMessageId: `m${++n}`,
        authorId: 'U1',
        authorName: 'ana',
        fromBot: false,
        text: `status ${n}: ${'the ledger migration is still running on the replica; '.repeat(6)}`,
        ts: new Date().toISOString(),
        mentionsBot: false,
        direct: false,
        ...fields,
      });
    };
    const emergencies = () => events.filter((e) => e.event === 'compaction.emergency').length;

    const rounds = 6;
    let completed = 0;
    while (completed < rounds) {
      // Chat until a pass is in flight (or the channel runs into an emergency instead).
      while ((await passesInFlight()).length === 0 && emergencies() === 0) await say();
      if (emergencies() > 0) break;
      // Some more while it is, then a question: the pass lands while the model answers.
      for (let i = 0; i < 4; i++) await say();
      await say({ mentionsBot: true, text: '@ebb how far along is it?' });
      completed++;
    }
    // The last answer's re-check runs in the channel's actor before this turn.
    await say();
    await bot.stop();
    await queue.close();

    expect(events.filter((e) => e.event === 'compaction.skipped' && e.reason === 'ineffective')).toEqual([]);
    // Every round queued its pass, and the next: no emergency ended the rounds.
    expect(completed).toBe(rounds);
    expect(emergencies()).toBe(0);
    expect(landedMidTurn).toBeGreaterThanOrEqual(rounds);
    // The first four landings (more than max_ineffective_passes = 3) each left usage over the
    // background threshold: nothing reset the count of passes that freed little, so only their
    // judgement kept the channel compacting.
    expect(Math.min(...afterLanding.slice(0, 4))).toBeGreaterThanOrEqual(0.6);
  });
});

describe('ChannelStates', () => {
  const settings = resolveChannel(parseConfig('', 'states.toml'), KEY);
  const said = (i: number, fields: Partial<AppendedMessage> = {}): AppendedMessage => ({
    role: 'user',
    author: 'a',
    text: `m${i}`,
    ts: '',
    platformMessageId: `p${i}`,
    ...fields,
  });
  /** A replica's cache on the shared store, and the turn it writes the channel through. */
  async function replica(channels: CountingStore, fence?: number) {
    const states = new ChannelStates({ channels, contextChanged: async () => {} });
    const state = await states.get(KEY);
    const turn = { key: KEY, state, tokenizer, settings, ...(fence === undefined ? {} : { fence }) };
    return { states, state, turn };
  }
  const step = toolStep;

  it('follows another replica’s appends by their tail, and reloads whole only at a new generation', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await a.states.append(a.turn, said(1));
    await b.states.append(b.turn, said(2));
    await b.states.appendAll(b.turn, step('c1'));
    // A's next message lands at seq 5, past its head + 1: it reads seqs 2..5, not the whole context
    // (as B read seq 1 before its first).
    const tails = channels.tails;
    expect(await a.states.append(a.turn, said(5))).toEqual({ seq: 5, inserted: true });
    expect([channels.tails - tails, channels.loads]).toEqual([1, 0]);
    expect(a.states.stats()).toMatchObject({ deltaLoads: 1, reloads: 0 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
    // Another replica's step, then A's own: caught up again, its step included.
    await b.states.append(b.turn, said(6));
    expect(await a.states.appendAll(a.turn, step('c2'))).toEqual([7, 8]);
    expect(a.states.stats()).toMatchObject({ deltaLoads: 2, reloads: 0 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));

    // A splice by another writer is a new generation: the next append reloads the whole context.
    await channels.splice(KEY, { jobId: 'pass-1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
    await b.states.append(b.turn, said(9));
    const loads = channels.loads;
    await a.states.append(a.turn, said(10));
    expect(a.states.stats()).toMatchObject({ deltaLoads: 2, reloads: 1 });
    expect(channels.loads).toBe(loads + 1);
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
    expect(a.state.context.generation).toBe(1);
  });

  it('follows a redelivery by the tail when another replica archived more after the message', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await a.states.append(a.turn, said(1));
    await b.states.append(b.turn, said(2));
    // Message 1 again (a platform's retry): stored already, and this cache lacks message 2.
    const tails = channels.tails;
    expect(await a.states.append(a.turn, said(1))).toEqual({ seq: 1, inserted: false });
    expect([channels.tails - tails, channels.loads]).toEqual([1, 0]);
    expect(a.state.context.view().raw.map((m) => m.text)).toEqual(['m1', 'm2']);
    // After a take-back (a new generation) the redelivery reloads.
    await channels.editMessage(KEY, { seq: 2, text: 'm2, edited', tokens: 4, contextTokens: 4 });
    expect(await a.states.append(a.turn, said(2))).toEqual({ seq: 2, inserted: false });
    expect(channels.loads).toBe(1);
    expect(a.state.context.view().raw.map((m) => m.text)).toEqual(['m1', 'm2, edited']);
    expect(a.states.stats()).toMatchObject({ deltaLoads: 1, reloads: 1 });
  });

  it('brings a cached channel level with the store for a silence check, by the tail while it can', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await a.states.append(a.turn, said(1));
    await b.states.append(b.turn, said(2));
    await b.states.append(b.turn, said(3));
    expect(await a.states.current(KEY)).toBe(a.state);
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
    expect(a.states.stats()).toMatchObject({ deltaLoads: 1, reloads: 0 });
    // A splice nobody notified this replica of: the tail shows the new generation, then a reload.
    await channels.splice(KEY, { jobId: 'pass-1', fromSeq: 1, toSeq: 2, text: 'S', tokens: 5 });
    await a.states.current(KEY);
    expect(a.states.stats()).toMatchObject({ deltaLoads: 2, reloads: 1 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
    // One it was notified of: reloaded at once, no tail read first.
    await channels.splice(KEY, { jobId: 'pass-2', fromSeq: 1, toSeq: 3, text: 'S', tokens: 5 });
    a.states.markStale(KEY, 2);
    await a.states.current(KEY);
    expect(a.states.stats()).toMatchObject({ deltaLoads: 2, reloads: 2 });
    expect(a.state.context.generation).toBe(2);
  });

  it('appends under the turn’s fence: a stale one stores nothing and leaves the cache as it was', async () => {
    const channels = new CountingStore();
    const stale = await replica(channels, 3);
    const holder = await replica(channels, 4);
    await stale.states.append(stale.turn, said(1));
    await holder.states.append(holder.turn, said(2));
    await expect(stale.states.append(stale.turn, said(3))).rejects.toBeInstanceOf(FencedAppendError);
    await expect(stale.states.appendAll(stale.turn, step('c1'))).rejects.toMatchObject({
      code: 'channel_lease_lost',
      retryable: false,
    });
    expect(stale.state.context.headSeq).toBe(1);
    expect((await channels.loadContext(KEY)).headSeq).toBe(2);
    // An unleased turn (Redis away) is not checked.
    const unleased = await replica(channels);
    await unleased.states.append(unleased.turn, said(3));
    expect(await holder.states.appendAll(holder.turn, step('c2'))).toEqual([4, 5]);
  });

  it('tells the compactor once per move to a newer generation, whichever read sees it first', async () => {
    const channels = new CountingStore();
    for (let i = 1; i <= 3; i++)
      await channels.append(KEY, { role: 'user', author: 'a', text: `m${i}`, tokens: 20, contextTokens: 20 });
    const told: { key: string; calibration: Calibration }[] = [];
    const states = new ChannelStates({
      channels,
      contextChanged: async (key, calibration) => {
        told.push({ key, calibration });
      },
    });
    const state = await states.get(KEY);
    const splice = (toSeq: number) =>
      channels.splice(KEY, { jobId: `pass-${toSeq}`, fromSeq: 1, toSeq, text: 'S', tokens: 5 });

    // A pass lands mid-turn and its notification arrives before the turn's next append.
    await splice(2);
    expect(states.markStale(KEY, 1)).toBe(true);
    await states.append(
      { key: KEY, state, tokenizer, settings },
      {
        role: 'assistant',
        author: 'ebb',
        text: 'ok',
        ts: '',
      },
    );
    expect(state.context.generation).toBe(1);
    expect(told).toEqual([{ key: KEY, calibration: state.calibration }]);
    // The re-check the notification queued finds the context current: no reload, nothing to tell.
    const loads = channels.loads;
    expect(await states.get(KEY)).toBe(state);
    expect(channels.loads).toBe(loads);
    expect(told).toHaveLength(1);

    // A turn takes the stored context (as after a cut that found a splice) before the notification.
    await splice(4);
    state.context = new WorkingContext(await channels.loadContext(KEY));
    expect(states.markStale(KEY, 2)).toBe(true);
    await states.get(KEY);
    expect(told).toHaveLength(2);
    // A notification the cache has caught up with is no news.
    expect(states.markStale(KEY, 2)).toBe(false);
  });
});
