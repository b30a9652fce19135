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
import { RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';
import { ChannelStates } from './channel-states.js';

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
  /** Counts reloads. */
  class CountingStore extends InMemoryChannelStore {
    loads = 0;
    override async loadContext(channelKey: string) {
      this.loads++;
      return super.loadContext(channelKey);
    }
  }

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
    const settings = resolveChannel(parseConfig('', 'states.toml'), KEY);
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

  it('reloads on a redelivery when another replica archived more after the message', async () => {
    const channels = new CountingStore();
    const settings = resolveChannel(parseConfig('', 'states.toml'), KEY);
    const states = new ChannelStates({ channels, contextChanged: async () => {} });
    const say = (i: number) => ({
      role: 'user' as const,
      author: 'a',
      text: `m${i}`,
      ts: '',
      platformMessageId: `p${i}`,
    });
    const state = await states.get(KEY);
    const turn = { key: KEY, state, tokenizer, settings };
    await states.append(turn, say(1));
    // Another replica (the same store, its own cache) archives the next message.
    const other = new ChannelStates({ channels, contextChanged: async () => {} });
    await other.append({ ...turn, state: await other.get(KEY) }, say(2));
    // Message 1 again (a platform's retry): stored already, and this cache lacks message 2.
    const loads = channels.loads;
    expect(await states.append(turn, say(1))).toEqual({ seq: 1, inserted: false });
    expect(channels.loads).toBe(loads + 1);
    expect(state.context.view().raw.map((m) => m.text)).toEqual(['m1', 'm2']);
  });
});
