/**
 * The take-back runner on the in-memory stores: it finishes a take-back from its row alone (the
 * process that recorded it may be gone), writes the summaries holding it again from the redacted
 * archive, drops the memories derived from it, leaves a failed one pending for the next sweep, and
 * gives its claims up when it stops.
 */
import {
  PENDING_SUMMARY,
  type SummarizeInput,
  type Summarizer,
  type SummaryOutput,
  toNewMessage,
} from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { beforeEach, describe, expect, it } from 'vitest';
import { TakeBackRunner, type TakeBackRunnerOptions } from './take-back-runner.js';

const CHANNEL = 'web:take-back-runner';
const SECRET = 'the vault code is 7431';
const tokenizer = await loadTokenizer('o200k_base');

/** Echoes what it was given; fails while `failing` says so; hangs while `hang` is set. */
class EchoSummarizer implements Summarizer {
  readonly inputs: SummarizeInput[] = [];
  failing = 0;
  hang: Promise<void> | undefined;

  async summarize(input: SummarizeInput): Promise<SummaryOutput> {
    this.inputs.push(input);
    await this.hang;
    if (this.failing > 0) {
      this.failing--;
      throw new Error('the summarizer is down');
    }
    return {
      text: input.messages.map((m) => m.text).join(' | '),
      memories: [],
      fallback: false,
      model: 'echo',
      calls: [],
    };
  }
}

describe('TakeBackRunner', () => {
  let channels: InMemoryChannelStore;
  let memories: InMemoryMemoryStore;
  let runs: InMemoryRunStore;
  let summarizer: EchoSummarizer;
  let logger: RecordingLogger;
  let changes: { channelKey: string; generation: number }[];
  let scrubbed: string[][];

  const runner = (overrides: Partial<TakeBackRunnerOptions> = {}) => {
    const notifier = new InProcessContextNotifier();
    void notifier.subscribe((c) => changes.push(c));
    return new TakeBackRunner({
      channels,
      memories,
      runs,
      takeBacks: channels.takeBacks,
      settingsFor: async () => ({ summaryMaxTokens: 400, memoryScope: 'channel', tokenizer, summarizer }),
      notifier,
      logger,
      afterCompleted: async (t) => {
        scrubbed.push([...t.platformMessageIds]);
      },
      ...overrides,
    });
  };
  /** The deletion's store write alone: what a process that died right after its 200 leaves. */
  const deleteSecret = async () => {
    const outcome = await channels.redactArchive(
      CHANNEL,
      [{ seq: 5, role: 'user', author: 'ana', text: '[message deleted]', tokens: 4 }],
      { kind: 'deleted', ranges: [{ fromSeq: 5, toSeq: 5 }], platformMessageIds: ['m5'] },
    );
    if (!outcome.takeBack) throw new Error('no take-back recorded');
    return outcome.takeBack;
  };
  const summaryTexts = async () =>
    (await channels.loadPrefix(CHANNEL)).spans.map((s) => (s.kind === 'summary' ? s.text : ''));

  beforeEach(async () => {
    channels = new InMemoryChannelStore();
    memories = new InMemoryMemoryStore();
    runs = new InMemoryRunStore();
    summarizer = new EchoSummarizer();
    logger = new RecordingLogger();
    changes = [];
    scrubbed = [];
    for (let i = 1; i <= 12; i++) {
      const text = i === 5 ? SECRET : `message ${i}`;
      await channels.append(
        CHANNEL,
        toNewMessage({ role: 'user', author: 'ana', text, platformMessageId: `m${i}` }, tokenizer, 1_000),
      );
    }
    await channels.splice(CHANNEL, {
      jobId: 'j1',
      fromSeq: 1,
      toSeq: 8,
      text: `so far: ${SECRET}`,
      tokens: 12,
    });
    await memories.upsert([
      {
        type: 'fact',
        text: 'The code is 7431',
        importance: 0.9,
        scope: CHANNEL,
        channelKey: CHANNEL,
        fromSeq: 4,
        toSeq: 6,
      },
      {
        type: 'fact',
        text: 'Ana ships',
        importance: 0.5,
        scope: CHANNEL,
        channelKey: CHANNEL,
        fromSeq: 9,
        toSeq: 9,
      },
    ]);
  });

  it('finishes a take-back from its row alone: every copy derived from it goes, and the row completes', async () => {
    await deleteSecret();
    const swept = runner();
    expect(await swept.sweep()).toBe(1);

    expect(await summaryTexts()).toHaveLength(1);
    expect((await summaryTexts())[0]).not.toContain('7431');
    expect((await summaryTexts())[0]).not.toBe(PENDING_SUMMARY);
    expect((await memories.list({ channelKey: CHANNEL })).map((m) => m.text)).toEqual(['Ana ships']);
    expect(await channels.takeBacks.pendingTakeBacks(CHANNEL)).toEqual([]);
    expect(logger.events('takeback.completed')[0]?.fields).toMatchObject({
      channel: CHANNEL,
      kind: 'deleted',
      memories: 1,
      summaries: 1,
    });
    expect(scrubbed).toEqual([['m5']]);
    expect(changes.at(-1)?.channelKey).toBe(CHANNEL);
    // Nothing is left to claim.
    expect(await swept.sweep()).toBe(0);
  });

  it('settles at once: summaries set aside and memories gone before the slow rewrite', async () => {
    const takeBack = await deleteSecret();
    const settled = await runner().settle(takeBack);
    expect(settled).toMatchObject({ memories: 1, summaries: 1 });
    expect(await summaryTexts()).toEqual([PENDING_SUMMARY]);
    expect(summarizer.inputs).toEqual([]);
  });

  it('drops a memory that quotes the fact though another message of its range shares its words', async () => {
    // The word rule this replaced kept it: each of its words is also in seq 13, which stays.
    await channels.append(
      CHANNEL,
      toNewMessage(
        { role: 'user', author: 'bo', text: 'the vault code review is set', platformMessageId: 'm13' },
        tokenizer,
        1_000,
      ),
    );
    await memories.upsert([
      {
        type: 'fact',
        text: 'The vault code is set',
        importance: 0.9,
        scope: CHANNEL,
        channelKey: CHANNEL,
        fromSeq: 5,
        toSeq: 13,
      },
    ]);
    const takeBack = await deleteSecret();
    await runner().settle(takeBack);
    expect((await memories.list({ channelKey: CHANNEL })).map((m) => m.text)).toEqual(['Ana ships']);
  });

  it('leaves a take-back that failed pending and released, and the next sweep finishes it', async () => {
    await deleteSecret();
    summarizer.failing = 1;
    const first = runner();
    await first.sweep();
    expect(logger.events('takeback.failed')).toHaveLength(1);
    expect(await summaryTexts()).toEqual([PENDING_SUMMARY]);
    expect(await channels.takeBacks.pendingTakeBacks(CHANNEL)).toHaveLength(1);

    await first.sweep();
    expect(logger.events('takeback.completed')[0]?.fields).toMatchObject({ attempts: 2 });
    expect((await summaryTexts())[0]).not.toContain('7431');
  });

  it('tells onFinished how each take-back ended: failed (still pending), then completed with its counts', async () => {
    const takeBack = await deleteSecret();
    const finished: [string, string, unknown][] = [];
    const told = runner({
      onFinished: (t, outcome) =>
        finished.push([t.id, t.channelKey, outcome.status === 'completed' ? outcome.counts : outcome.error]),
    });
    summarizer.failing = 1;
    await told.sweep();
    expect(finished).toEqual([[takeBack.id, CHANNEL, 'the summarizer is down']]);
    expect(await channels.takeBacks.pendingTakeBacks(CHANNEL)).toHaveLength(1);

    told.complete(takeBack);
    await told.idle();
    expect(finished.at(-1)).toEqual([takeBack.id, CHANNEL, { memories: 0, checkpoints: 0, summaries: 1 }]);
    expect(await channels.takeBacks.pendingTakeBacks(CHANNEL)).toEqual([]);
  });

  it('keeps a take-back completed when its onFinished listener throws', async () => {
    await deleteSecret();
    const throwing = runner({
      onFinished: () => {
        throw new Error('listener bug');
      },
    });
    expect(await throwing.sweep()).toBe(1);
    expect(logger.events('takeback.completed')).toHaveLength(1);
    expect(logger.events('takeback.failed')).toEqual([]);
    expect(logger.events('takeback.listener_failed')).toHaveLength(1);
    expect(await channels.takeBacks.pendingTakeBacks(CHANNEL)).toEqual([]);
  });

  it('gives its claims up when it stops, so another process finishes what the stop cut off', async () => {
    const takeBack = await deleteSecret();
    let release = () => {};
    summarizer.hang = new Promise((resolve) => {
      release = resolve;
    });
    const stopping = runner();
    stopping.complete(takeBack);
    await expect.poll(() => summarizer.inputs.length).toBe(1);
    await stopping.stop();

    summarizer.hang = undefined;
    const next = runner();
    expect(await next.sweep()).toBe(1);
    expect(logger.events('takeback.completed')).toHaveLength(1);
    release();
    await stopping.idle();
  });
});
