/**
 * `redactChannel` when passes keep landing under it: a summary span a pass replaced while it was
 * being written again is planned again, and what is still replaced after the last round is reported
 * as unresolved instead of being passed over in silence. In-memory stores; the summarizer is the
 * port's test double, which lands a wider pass (as a worker would) while it "thinks".
 */
import { REDACTED_SUMMARY, type Summarizer, type SummaryOutput, tombstone } from '@ebb/core';
import { InMemoryChannelStore, InMemoryRunStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { describe, expect, it } from 'vitest';
import { redactChannel } from './redact-channel.js';

const tokenizer = await loadTokenizer('o200k_base');
const KEY = 'web:race';

async function channelWithSummary(): Promise<InMemoryChannelStore> {
  const channels = new InMemoryChannelStore();
  for (let seq = 1; seq <= 30; seq++) {
    const text = seq === 4 ? 'the vault code is 7431' : `message ${seq}`;
    await channels.append(KEY, { role: 'user', author: 'ana', text, tokens: 5, contextTokens: 5 });
  }
  await channels.splice(KEY, { jobId: 'pass-1', fromSeq: 1, toSeq: 10, text: 'holds 7431', tokens: 5 });
  return channels;
}

/** Lands a pass one seq wider than the span being rewritten, the first `times` calls. */
function racingSummarizer(channels: InMemoryChannelStore, times: number): Summarizer & { calls: number } {
  const summarizer = {
    calls: 0,
    async summarize(input: { fromSeq: number; toSeq: number }): Promise<SummaryOutput> {
      summarizer.calls++;
      if (summarizer.calls <= times) {
        const toSeq = input.toSeq + 1;
        await channels.splice(KEY, {
          jobId: `pass-${toSeq}`,
          fromSeq: 1,
          toSeq,
          text: 'holds 7431',
          tokens: 5,
        });
      }
      return { text: 'redacted summary', memories: [], fallback: false, model: 'test', calls: [] };
    },
  };
  return summarizer;
}

async function redact(channels: InMemoryChannelStore, summarizer: Summarizer) {
  return redactChannel(
    {
      channels,
      runs: new InMemoryRunStore(),
      settingsFor: async () => ({ summaryMaxTokens: 200, memoryScope: 'channel', tokenizer, summarizer }),
    },
    { channelKey: KEY, ranges: [{ fromSeq: 4, toSeq: 4 }], archive: false },
  );
}

describe('redactChannel with passes landing under it', () => {
  it('plans a span a pass replaced again, and finishes', async () => {
    const channels = await channelWithSummary();
    const summarizer = racingSummarizer(channels, 2);
    const report = await redact(channels, summarizer);
    expect(report.unresolved).toEqual([]);
    expect(summarizer.calls).toBe(3);
    const [span] = (await channels.loadContext(KEY)).spans;
    expect(span).toMatchObject({ kind: 'summary', fromSeq: 1, toSeq: 12, text: 'redacted summary' });
  });

  it('reports what passes kept replacing after the last round', async () => {
    const channels = await channelWithSummary();
    const report = await redact(channels, racingSummarizer(channels, Number.POSITIVE_INFINITY));
    expect(report.spans).toEqual([]);
    expect(report.unresolved).toHaveLength(1);
    const [span] = (await channels.loadContext(KEY)).spans;
    expect(span?.kind === 'summary' ? span.text : '').toBe('holds 7431');
  });
});

describe('redactChannel fromEarlier', () => {
  /** Records what it was shown. */
  function recordingSummarizer() {
    const inputs: { earlierSummaries: readonly string[]; seqs: number[] }[] = [];
    const summarizer: Summarizer = {
      async summarize(input) {
        inputs.push({ earlierSummaries: input.earlierSummaries, seqs: input.messages.map((m) => m.seq) });
        return { text: 'rewritten', memories: [], fallback: false, model: 'test', calls: [] };
      },
    };
    return { summarizer, inputs };
  }

  it('writes a span again from the whole retired summary before the seq and the archive after it', async () => {
    const channels = await channelWithSummary();
    // A second pass folds the first: 1..10 is retired (whole), 1..20 active.
    await channels.splice(KEY, {
      jobId: 'pass-2',
      fromSeq: 1,
      toSeq: 20,
      text: 'holds 7431 and 15',
      tokens: 5,
    });
    const { summarizer, inputs } = recordingSummarizer();
    const report = await redactChannel(
      {
        channels,
        runs: new InMemoryRunStore(),
        settingsFor: async () => ({ summaryMaxTokens: 200, memoryScope: 'channel', tokenizer, summarizer }),
      },
      { channelKey: KEY, ranges: [{ fromSeq: 15, toSeq: 15 }], archive: false, fromEarlier: true },
    );
    expect(report.spans).toEqual([{ fromSeq: 1, toSeq: 20 }]);
    // Shown the summary of 1..10 and messages 11..20 only, as the pass that made the span was,
    // without the redacted one.
    expect(inputs).toEqual([
      { earlierSummaries: ['holds 7431'], seqs: [11, 12, 13, 14, 16, 17, 18, 19, 20] },
    ]);
    // A seq the retired summary holds: nothing before it is whole, so the whole range.
    await redactChannel(
      {
        channels,
        runs: new InMemoryRunStore(),
        settingsFor: async () => ({ summaryMaxTokens: 200, memoryScope: 'channel', tokenizer, summarizer }),
      },
      { channelKey: KEY, ranges: [{ fromSeq: 4, toSeq: 4 }], archive: false, fromEarlier: true },
    );
    expect(inputs[1]).toEqual({
      earlierSummaries: [],
      seqs: Array.from({ length: 20 }, (_, i) => 1 + i).filter((seq) => seq !== 4),
    });
  });

  it('shows the summarizer no tombstone, and writes a span nothing is left of without calling it', async () => {
    const channels = await channelWithSummary();
    const { summarizer, inputs } = recordingSummarizer();
    const settingsFor = async () => ({
      summaryMaxTokens: 200,
      memoryScope: 'channel' as const,
      tokenizer,
      summarizer,
    });
    // A deletion's tombstones are in the archive (asArchived): 1..5 leave the summarizer's input.
    const taken = await channels.readArchive(KEY, 1, 5);
    await channels.redactArchive(
      KEY,
      taken.map((m) => tombstone(m, tokenizer)),
      { kind: 'deleted', ranges: [{ fromSeq: 1, toSeq: 5 }], platformMessageIds: [] },
    );
    await redactChannel(
      { channels, runs: new InMemoryRunStore(), settingsFor },
      { channelKey: KEY, ranges: [{ fromSeq: 1, toSeq: 5 }], archive: false, asArchived: true },
    );
    expect(inputs).toEqual([{ earlierSummaries: [], seqs: [6, 7, 8, 9, 10] }]);

    // Retention takes back the rest of the span: nothing is left to summarize.
    const rest = await channels.readArchive(KEY, 6, 10);
    await channels.redactArchive(
      KEY,
      rest.map((m) => tombstone(m, tokenizer)),
      { kind: 'retention', ranges: [{ fromSeq: 6, toSeq: 10 }], platformMessageIds: [] },
    );
    const report = await redactChannel(
      { channels, runs: new InMemoryRunStore(), settingsFor },
      { channelKey: KEY, ranges: [{ fromSeq: 6, toSeq: 10 }], archive: false, asArchived: true },
    );
    expect(report.spans).toEqual([{ fromSeq: 1, toSeq: 10 }]);
    expect(inputs).toHaveLength(1);
    const prefix = await channels.loadPrefix(KEY);
    expect(prefix.spans.map((s) => [s.fromSeq, s.toSeq, s.kind === 'summary' ? s.text : s.kind])).toEqual([
      [1, 10, REDACTED_SUMMARY],
    ]);
  });
});
