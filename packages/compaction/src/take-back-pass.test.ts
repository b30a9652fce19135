/**
 * A compaction pass against a take-back that lands while it runs, for however long it runs: nothing
 * it read before the take-back is checkpointed, stored as a memory or spliced, and it starts again
 * from the redacted archive. The summarizer here echoes what it was given, so the summary shows what
 * the pass read; the take-back is the store's own write (tombstones and take-back in one step).
 */
import {
  type CompactionLogEvent,
  type SummarizeInput,
  type Summarizer,
  type SummaryOutput,
  toNewMessage,
} from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { beforeEach, describe, expect, it } from 'vitest';
import { createCompactionProcessor } from './compaction-processor.js';

const CHANNEL = 'web:take-back-pass';
const SECRET = 'the vault code is 7431';
const SECRET_SEQ = 5;
const tokenizer = await loadTokenizer('o200k_base');

/**
 * Summarizes by echoing its messages, and proposes a memory for each message that names the vault.
 * `during` runs inside the first call, between the pass's snapshot and its output: a pass in flight.
 */
class EchoSummarizer implements Summarizer {
  readonly inputs: SummarizeInput[] = [];
  during: (() => Promise<void>) | undefined;

  async summarize(input: SummarizeInput): Promise<SummaryOutput> {
    await input.beforeCall?.();
    this.inputs.push(input);
    const hook = this.during;
    this.during = undefined;
    await hook?.();
    return {
      text: input.messages.map((m) => m.text).join(' | '),
      memories: input.messages
        .filter((m) => m.text.includes('vault'))
        .map((m) => ({ type: 'fact', text: m.text, importance: 0.9, fromSeq: m.seq, toSeq: m.seq })),
      fallback: false,
      model: 'echo',
      calls: [],
    };
  }
}

describe('a compaction pass and a take-back that lands while it runs', () => {
  let channels: InMemoryChannelStore;
  let memories: InMemoryMemoryStore;
  let runs: InMemoryRunStore;
  let summarizer: EchoSummarizer;
  let events: CompactionLogEvent[];

  const processor = (runStore = runs) =>
    createCompactionProcessor({
      channels,
      memories,
      runs: runStore,
      takeBacks: channels.takeBacks,
      notifier: new InProcessContextNotifier(),
      settingsFor: async () => ({ summaryMaxTokens: 400, memoryScope: 'channel', tokenizer, summarizer }),
      onEvent: (e) => events.push(e),
    });
  const job = {
    jobId: 'job-1',
    channelKey: CHANNEL,
    tier: 'background' as const,
    fromSeq: 1,
    toSeq: 10,
    generation: 0,
    attempt: 1,
  };
  /** What a deletion of the secret's message writes: its tombstone and its take-back, at once. */
  const takeBack = () =>
    channels.redactArchive(
      CHANNEL,
      [{ seq: SECRET_SEQ, role: 'user', author: 'ana', text: '[message deleted]', tokens: 4 }],
      { kind: 'deleted', ranges: [{ fromSeq: SECRET_SEQ, toSeq: SECRET_SEQ }], platformMessageIds: ['m5'] },
    );
  /** Every place a pass writes to, as text. */
  const everywhere = async () =>
    JSON.stringify([
      await channels.loadContext(CHANNEL),
      await memories.list({ channelKey: CHANNEL }),
      await runs.get('job-1'),
    ]);

  beforeEach(async () => {
    channels = new InMemoryChannelStore();
    memories = new InMemoryMemoryStore();
    runs = new InMemoryRunStore();
    summarizer = new EchoSummarizer();
    events = [];
    for (let i = 1; i <= 20; i++) {
      const text = i === SECRET_SEQ ? SECRET : `message ${i} about the release`;
      await channels.append(
        CHANNEL,
        toNewMessage({ role: 'user', author: 'ana', text, platformMessageId: `m${i}` }, tokenizer, 1_000),
      );
    }
    await runs.create({ ...job, usage: 0.81 });
  });

  it('while the summarizer runs: starts again from the redacted archive and keeps nothing it read', async () => {
    summarizer.during = async () => {
      await takeBack();
    };
    const result = await processor()(job);

    expect(result).toMatchObject({ kind: 'completed', outcome: { kind: 'splice' } });
    expect(summarizer.inputs).toHaveLength(2);
    expect(JSON.stringify(summarizer.inputs[1])).not.toContain('7431');
    expect(await everywhere()).not.toContain('7431');
    expect(events.map((e) => e.event)).toEqual([
      'compaction.started',
      'compaction.restarted',
      'compaction.completed',
    ]);
    expect(events[1]).toMatchObject({ reason: 'taken_back', jobId: 'job-1' });
  });

  it('between its checkpoint and its splice: drops the checkpoint and the memories it stored', async () => {
    // The take-back lands right after the checkpoint is written (a pass that took minutes to get here).
    const racing = new (class extends InMemoryRunStore {
      armed = true;
      override async saveOutput(jobId: string, output: SummaryOutput) {
        const saved = await super.saveOutput(jobId, output);
        if (this.armed) {
          this.armed = false;
          await takeBack();
        }
        return saved;
      }
    })();
    runs = racing;
    await runs.create({ ...job, usage: 0.81 });
    const result = await processor()(job);

    expect(result).toMatchObject({ kind: 'completed' });
    expect(summarizer.inputs).toHaveLength(2);
    expect(await everywhere()).not.toContain('7431');
  });

  it('whose memories landed before the take-back: the splice is refused under the lock, the memories go', async () => {
    // The take-back commits after the memories were checked, before the splice: only the splice's
    // own check, under the channel lock, can see it.
    const splice = channels.splice.bind(channels);
    let armed = true;
    channels.splice = async (key, result) => {
      if (armed) {
        armed = false;
        await takeBack();
      }
      return splice(key, result);
    };
    const result = await processor()(job);

    expect(result).toMatchObject({ kind: 'completed' });
    expect(summarizer.inputs).toHaveLength(2);
    expect(await everywhere()).not.toContain('7431');
  });

  it('resuming a checkpoint read before a take-back: summarizes again instead of landing it', async () => {
    await runs.saveOutput('job-1', {
      text: `an old summary: ${SECRET}`,
      memories: [],
      fallback: false,
      model: 'echo',
      calls: [],
      takeBackMark: 0,
    });
    await takeBack();
    const result = await processor()({ ...job, attempt: 2 });

    expect(result).toMatchObject({ kind: 'completed' });
    expect(summarizer.inputs).toHaveLength(1);
    expect(await everywhere()).not.toContain('7431');
  });

  it('lands as usual when a take-back covers none of its range', async () => {
    summarizer.during = async () => {
      await channels.redactArchive(
        CHANNEL,
        [{ seq: 15, role: 'user', author: 'ana', text: '[message deleted]', tokens: 4 }],
        { kind: 'deleted', ranges: [{ fromSeq: 15, toSeq: 15 }], platformMessageIds: ['m15'] },
      );
    };
    const result = await processor()(job);

    expect(result).toMatchObject({ kind: 'completed', outcome: { kind: 'splice' } });
    expect(summarizer.inputs).toHaveLength(1);
    expect((await channels.loadContext(CHANNEL)).spans[0]).toMatchObject({ kind: 'summary', toSeq: 10 });
    expect(await memories.list({ channelKey: CHANNEL })).toMatchObject([{ text: SECRET, fromSeq: 5 }]);
  });
});
