/**
 * A pass's calls reach the channel's usage record before the summary is returned (so `ebb forget`,
 * which closes its database right after, keeps them), a pass the summarizer gave up on counts the
 * calls it made, and a record that fails is logged and never fails the pass.
 */
import {
  EbbError,
  type LlmCall,
  type SummarizeInput,
  type Summarizer,
  SummarizerGaveUpError,
  type SummaryOutput,
  type UsageStore,
  type UsageTotals,
} from '@ebb/core';
import { InMemoryUsageStore } from '@ebb/core/testing';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { describe, expect, it } from 'vitest';
import { recordedSummarizer } from './recorded-summarizer.js';

const input: SummarizeInput = {
  channelKey: 'web:usage',
  fromSeq: 1,
  toSeq: 4,
  earlierSummaries: [],
  messages: [],
  maxTokens: 200,
};

const call = (model: string, inputTokens: number, cached = 0): LlmCall => ({
  purpose: 'summary',
  model,
  inputTokens,
  cachedInputTokens: cached,
  outputTokens: 50,
  durationMs: 10,
  attempts: 1,
});

const output = (calls: readonly LlmCall[]): SummaryOutput => ({
  text: 'S',
  memories: [],
  fallback: false,
  model: 'gpt-summary',
  calls,
});

const answering = (calls: readonly LlmCall[]): Summarizer => ({ summarize: async () => output(calls) });

const since = new Date(0);

describe('recordedSummarizer', () => {
  it('adds a pass’s calls to the channel’s usage, one row per model', async () => {
    const usage = new InMemoryUsageStore();
    const summarizer = recordedSummarizer(
      answering([call('gpt-summary', 1_000, 600), call('gpt-summary', 800), call('gpt-merge', 300)]),
      usage,
    );
    await summarizer.summarize(input);
    const totals = await usage.totalsSince(since);
    expect(totals.sort((a, b) => a.model.localeCompare(b.model))).toEqual([
      {
        channelKey: 'web:usage',
        purpose: 'summary',
        model: 'gpt-merge',
        calls: 1,
        promptTokens: 300,
        cachedTokens: 0,
        completionTokens: 50,
        // A pass answers no turn.
        replies: 0,
        coldReplies: 0,
      },
      {
        channelKey: 'web:usage',
        purpose: 'summary',
        model: 'gpt-summary',
        calls: 2,
        promptTokens: 1_800,
        cachedTokens: 600,
        completionTokens: 100,
        replies: 0,
        coldReplies: 0,
      },
    ]);
  });

  it('returns the summary only once the record is written', async () => {
    let release: (() => void) | undefined;
    const recorded: UsageTotals[] = [];
    const slow: UsageStore = {
      record: (totals) =>
        new Promise<void>((resolve) => {
          release = () => {
            recorded.push(totals);
            resolve();
          };
        }),
      totalsSince: async () => recorded,
      totalsIn: async () => [],
    };
    let returned = false;
    const pass = recordedSummarizer(answering([call('gpt-summary', 100)]), slow)
      .summarize(input)
      .then((o) => {
        returned = true;
        return o;
      });
    // The summarizer answered and the record is in flight: the pass cannot return before it lands.
    await expect.poll(() => release).toBeDefined();
    await Promise.resolve();
    expect(returned).toBe(false);
    release?.();
    expect((await pass).text).toBe('S');
    expect(recorded).toHaveLength(1);
  });

  it('records the calls of a pass the summarizer gave up on, and gives up too', async () => {
    const usage = new InMemoryUsageStore();
    const gaveUp = new SummarizerGaveUpError(
      new EbbError('rate limited', { code: 'rate_limited', retryable: true }),
      [call('gpt-summary', 900)],
    );
    const summarizer = recordedSummarizer({ summarize: async () => Promise.reject(gaveUp) }, usage);
    await expect(summarizer.summarize(input)).rejects.toBe(gaveUp);
    expect(await usage.totalsSince(since)).toMatchObject([
      { model: 'gpt-summary', calls: 1, promptTokens: 900 },
    ]);
  });

  it('logs a record that fails and still returns the summary', async () => {
    const log = new RecordingLogger();
    const broken: UsageStore = {
      record: async () => Promise.reject(new Error('connection terminated')),
      totalsSince: async () => [],
      totalsIn: async () => [],
    };
    const summarizer = recordedSummarizer(answering([call('gpt-summary', 100)]), broken, log);
    expect((await summarizer.summarize(input)).text).toBe('S');
    expect(log.events('usage.record_failed')).toHaveLength(1);
    expect(log.events('usage.record_failed')[0]?.fields).toMatchObject({ channel: 'web:usage' });
  });
});
