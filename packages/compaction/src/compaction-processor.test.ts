import { type CompactionLogEvent, type Summarizer, type SummaryOutput, toNewMessage } from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { ExtractiveSummarizer, loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type ChannelPassSettings,
  createCompactionProcessor,
  recordFailure,
} from './compaction-processor.js';

const CHANNEL = 'web:processor-test';
const tokenizer = await loadTokenizer('o200k_base');

/** A summarizer with memories, counting its calls: the LLM is played by the fake server in the .int tests. */
class ScriptedSummarizer implements Summarizer {
  calls = 0;
  async summarize(): Promise<SummaryOutput> {
    this.calls++;
    return {
      text: 'Ana decided to ship on Friday.',
      memories: [
        { type: 'decision', text: 'Ship on Friday', importance: 0.8, speaker: 'ana', fromSeq: 3, toSeq: 3 },
      ],
      fallback: false,
      model: 'scripted',
      calls: [
        {
          purpose: 'summary',
          model: 'scripted',
          inputTokens: 100,
          outputTokens: 20,
          durationMs: 1,
          attempts: 1,
        },
      ],
    };
  }
}

describe('compaction processor', () => {
  let channels: InMemoryChannelStore;
  let memories: InMemoryMemoryStore;
  let runs: InMemoryRunStore;
  let notifier: InProcessContextNotifier;
  let summarizer: ScriptedSummarizer;
  let events: CompactionLogEvent[];
  let changes: { channelKey: string; generation: number }[];

  const settings = (s: Summarizer, summaryMaxTokens = 200): ChannelPassSettings => ({
    summaryMaxTokens,
    memoryScope: 'channel',
    tokenizer,
    summarizer: s,
  });

  beforeEach(async () => {
    channels = new InMemoryChannelStore();
    memories = new InMemoryMemoryStore();
    runs = new InMemoryRunStore();
    notifier = new InProcessContextNotifier();
    summarizer = new ScriptedSummarizer();
    events = [];
    changes = [];
    await notifier.subscribe((c) => changes.push(c));
    for (let i = 1; i <= 40; i++) {
      const text = `message number ${i} about the release`;
      const message = {
        role: 'user' as const,
        author: i % 2 ? 'ana' : 'bo',
        text,
        platformMessageId: `m${i}`,
      };
      await channels.append(CHANNEL, toNewMessage(message, tokenizer, 1_000));
    }
  });

  const processor = (s: Summarizer = summarizer, summaryMaxTokens?: number) =>
    createCompactionProcessor({
      channels,
      memories,
      runs,
      takeBacks: channels.takeBacks,
      notifier,
      settingsFor: async () => settings(s, summaryMaxTokens),
      onEvent: (e) => events.push(e),
    });
  const job = {
    jobId: 'job-1',
    channelKey: CHANNEL,
    tier: 'background' as const,
    fromSeq: 1,
    toSeq: 20,
    generation: 0,
    attempt: 1,
  };

  it('summarizes the range, writes memories, splices, records the run and announces the change', async () => {
    await runs.create({
      jobId: 'job-1',
      channelKey: CHANNEL,
      tier: 'background',
      usage: 0.81,
      fromSeq: 1,
      toSeq: 20,
      generation: 0,
    });
    const result = await processor()(job);
    expect(result).toMatchObject({
      kind: 'completed',
      memoriesAdded: 1,
      fallback: false,
      outcome: { kind: 'splice', messagesRemoved: 20 },
    });

    const context = await channels.loadContext(CHANNEL);
    expect(context.spans).toMatchObject([{ kind: 'summary', fromSeq: 1, toSeq: 20, jobId: 'job-1' }]);
    expect(context.raw.map((m) => m.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 21));
    expect(await memories.list({ channelKey: CHANNEL })).toMatchObject([
      { type: 'decision', text: 'Ship on Friday', scope: CHANNEL },
    ]);
    const run = await runs.get('job-1');
    expect(run).toMatchObject({
      status: 'completed',
      attempts: 1,
      memoriesAdded: 1,
      model: 'scripted',
      inputTokens: 100,
      outputTokens: 20,
    });
    expect(run?.tokensAfter).toBeLessThan(run?.tokensBefore ?? 0);
    expect(changes).toEqual([{ channelKey: CHANNEL, generation: 1 }]);
    expect(events.map((e) => e.event)).toEqual(['compaction.started', 'compaction.completed']);
  });

  it('keeps a completed pass completed when its job is reported failed after it (BullMQ lost the job)', async () => {
    await processor()(job);
    await recordFailure(runs, job.jobId, new Error('Missing key for job job-1. moveToFinished'));
    expect(await runs.get(job.jobId)).toMatchObject({ status: 'completed' });
  });

  it('records the worker-created run with the job’s focus and the pass it follows', async () => {
    await processor()({ ...job, focus: 'the release', after: 'job-0' });
    expect(await runs.get(job.jobId)).toMatchObject({ focus: 'the release', after: 'job-0' });
  });

  it('does nothing the second time a finished job is delivered', async () => {
    await processor()(job);
    const second = await processor()(job);
    expect(second).toEqual({ kind: 'already_finished', status: 'completed' });
    expect(summarizer.calls).toBe(1);
    expect(await memories.list({ channelKey: CHANNEL })).toHaveLength(1);
  });

  it('reuses the checkpointed summary on a retry, so nothing is written twice', async () => {
    // A first try that died after the checkpoint: the run is running and holds the output.
    await runs.create({
      jobId: 'job-1',
      channelKey: CHANNEL,
      tier: 'background',
      usage: 0.8,
      fromSeq: 1,
      toSeq: 20,
      generation: 0,
    });
    await runs.start('job-1');
    await runs.saveOutput('job-1', await summarizer.summarize());
    await memories.upsert([
      {
        type: 'decision',
        text: 'Ship on Friday',
        importance: 0.8,
        speaker: 'ana',
        scope: CHANNEL,
        channelKey: CHANNEL,
        fromSeq: 3,
        toSeq: 3,
      },
    ]);

    const result = await processor()({ ...job, attempt: 2 });
    expect(result).toMatchObject({ kind: 'completed', memoriesAdded: 0 });
    expect(summarizer.calls).toBe(1);
    expect(await memories.list({ channelKey: CHANNEL })).toHaveLength(1);
    expect(await runs.get('job-1')).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it('keeps two workers racing on one job (a lost lock) to one output, one memory and one span', async () => {
    // A race for sure, not timers that usually make one: both workers are inside the LLM call before
    // either saves, the second answers first, and the first answers only once that output is saved.
    let n = 0;
    let secondCalled = () => {};
    const bothCalling = new Promise<void>((resolve) => (secondCalled = resolve));
    const varying: Summarizer = {
      summarize: async () => {
        const i = ++n;
        if (i === 2) secondCalled();
        await bothCalling;
        if (i === 1)
          await vi.waitFor(async () => expect((await runs.get('job-1'))?.output?.text).toBe('summary v2'));
        return {
          text: `summary v${i}`,
          memories: [
            {
              type: 'decision',
              text: i === 1 ? 'Ship on Friday' : 'Release ships Friday',
              importance: 0.8,
              fromSeq: 1,
              toSeq: 1,
            },
          ],
          fallback: false,
          model: 'scripted',
          calls: [],
        };
      },
    };
    const [a, b] = await Promise.all([processor(varying)(job), processor(varying)({ ...job, attempt: 2 })]);
    expect([a.kind, b.kind]).toEqual(['completed', 'completed']);
    expect(n).toBe(2);
    // The output saved first is the one both went on with.
    const stored = await runs.get('job-1');
    expect(stored?.output?.text).toBe('summary v2');
    const context = await channels.loadContext(CHANNEL);
    expect(context.spans).toHaveLength(1);
    expect(context.spans[0]?.kind === 'summary' && context.spans[0].text).toBe('summary v2');
    expect((await memories.list({ channelKey: CHANNEL })).map((m) => m.text)).toEqual([
      'Release ships Friday',
    ]);
  });

  it('is stale before any LLM call when a wider summary is already in place', async () => {
    await processor()({ ...job, jobId: 'wide', toSeq: 30 });
    const result = await processor()(job);
    expect(result).toEqual({ kind: 'stale', reason: 'summary 1..30 reaches outside 1..20' });
    expect(summarizer.calls).toBe(1);
    expect(await runs.get('job-1')).toMatchObject({ status: 'stale' });
  });

  it('folds the summary spans inside its range and reads only the rest from the archive', async () => {
    await processor()({ ...job, jobId: 'first', toSeq: 10 });
    let seen: readonly string[] = [];
    let seqs: number[] = [];
    const recording: Summarizer = {
      summarize: async (input) => {
        seen = input.earlierSummaries;
        seqs = input.messages.map((m) => m.seq);
        return new ExtractiveSummarizer({ tokenizer }).summarize(input);
      },
    };
    await processor(recording)({ ...job, jobId: 'second', toSeq: 25 });
    expect(seen).toEqual(['Ana decided to ship on Friday.']);
    expect(seqs).toEqual(Array.from({ length: 15 }, (_, i) => i + 11));
  });

  it('opens the circuit after repeated failures and skips the channel for a while', async () => {
    let now = 1_000_000;
    for (const id of ['f1', 'f2', 'f3']) {
      await runs.create({
        jobId: id,
        channelKey: CHANNEL,
        tier: 'background',
        usage: 0.9,
        fromSeq: 1,
        toSeq: 20,
        generation: 0,
      });
      await runs.start(id);
      await recordFailure(runs, id, new Error('boom'));
    }
    const failing = createCompactionProcessor({
      channels,
      memories,
      runs,
      takeBacks: channels.takeBacks,
      notifier,
      settingsFor: async () => settings(summarizer),
      now: () => now,
      breaker: { failures: 3, pauseMs: 60_000 },
    });
    // InMemoryRunStore stamps finishedAt with its own clock (Date.now): move ours next to it.
    now = Date.now();
    expect(await failing(job)).toEqual({ kind: 'skipped', reason: 'circuit_open' });
    // Still open for the next job within the pause: a skipped run is not an attempt.
    now += 30_000;
    expect(await failing({ ...job, jobId: 'job-2' })).toEqual({ kind: 'skipped', reason: 'circuit_open' });
    expect(summarizer.calls).toBe(0);
    now += 30_001;
    // After the pause, and the skipped job itself can run again when it is redelivered.
    expect(await failing(job)).toMatchObject({ kind: 'completed' });
    expect(await runs.get('job-1')).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it('lets a background pass with tries left wait for the LLM; a higher tier or the last try must land', async () => {
    const asked: Array<boolean | undefined> = [];
    const recording: Summarizer = {
      summarize: async (input) => {
        asked.push(input.canWait);
        return summarizer.summarize();
      },
    };
    const run = processor(recording);
    await run({ ...job, jobId: 'w1', lastAttempt: false });
    await run({ ...job, jobId: 'w2', toSeq: 25, generation: 1, lastAttempt: true });
    await run({ ...job, jobId: 'w3', toSeq: 30, generation: 2, tier: 'aggressive', lastAttempt: false });
    await run({ ...job, jobId: 'w4', toSeq: 35, generation: 3 });
    expect(asked).toEqual([true, false, false, false]);
  });

  it('counts passes the fallback completed because the LLM failed toward the breaker', async () => {
    const failingLlm: Summarizer = {
      summarize: async () => ({
        text: 'Participants: ana, bo.',
        memories: [],
        fallback: true,
        model: 'extractive',
        calls: [
          {
            purpose: 'summary',
            model: 'gpt',
            inputTokens: 0,
            outputTokens: 0,
            durationMs: 1,
            attempts: 4,
            error: 'llm_server',
            failedTries: ['llm_server', 'llm_server', 'llm_server', 'llm_server'],
          },
        ],
      }),
    };
    const run = processor(failingLlm);
    for (const [n, toSeq] of [10, 20, 30].entries()) {
      const result = await run({ ...job, jobId: `fb${n}`, toSeq, generation: n });
      expect(result).toMatchObject({ kind: 'completed', fallback: true });
      expect(await runs.get(`fb${n}`)).toMatchObject({
        status: 'completed',
        fallback: true,
        error: 'llm_server',
      });
    }
    expect(await run({ ...job, jobId: 'fb3', toSeq: 35, generation: 3 })).toEqual({
      kind: 'skipped',
      reason: 'circuit_open',
    });
  });

  it('keeps an offline channel (the extractive summarizer, no LLM) out of the breaker', async () => {
    const offline = new ExtractiveSummarizer({ tokenizer });
    // A budget under what each range holds: a summary larger than its range would not splice.
    const run = processor(offline, 40);
    for (const [n, toSeq] of [10, 20, 30, 35].entries()) {
      expect(await run({ ...job, jobId: `off${n}`, toSeq, generation: n })).toMatchObject({
        kind: 'completed',
      });
    }
  });
});
