import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { testPolicy } from '../../test/policy.js';
import { UNCALIBRATED } from '../model/tokens.js';
import type { CompactionJob, CompactionQueue, EnqueueOutcome } from '../ports/ports.js';
import { InMemoryChannelStore } from '../testing/in-memory-channel-store.js';
import { InMemoryRunStore } from '../testing/in-memory-run-store.js';
import { ChannelCompactor } from './channel-compactor.js';
import type { CompactionLogEvent } from './compaction-events.js';

/** A queue port that records jobs (the real drivers are tested in @ebb/queue). */
class RecordingQueue implements CompactionQueue {
  readonly jobs: CompactionJob[] = [];
  async enqueue(job: CompactionJob): Promise<EnqueueOutcome> {
    this.jobs.push(job);
    return { kind: 'enqueued', jobId: `job-${this.jobs.length}` };
  }
  async inFlight() {
    return [];
  }
  async jobState() {
    return 'pending' as const;
  }
  async close() {}
}

const KEY = 'web:c';
/** A summary budget a 1,000-token window can afford (the default's 4,096 would leave passes nothing to free). */
const policy = testPolicy({ protectRecent: 2, summaryMaxTokens: 60 });
const settings = {
  policy,
  contextWindow: 1_100,
  maxOutputTokens: 100,
  reservedTokens: 0,
  tokenizer: new CharTokenizer(),
};

/** A compactor over `channels` with a fresh run store (and the given queue, or one that records). */
function compactorOn(channels: InMemoryChannelStore, queue: CompactionQueue = new RecordingQueue()) {
  return new ChannelCompactor({ channels, runs: new InMemoryRunStore(), queue, markerTokens: 10 });
}

async function channelWith(messages: number) {
  const channels = new InMemoryChannelStore();
  for (let i = 0; i < messages; i++) {
    await channels.append(KEY, { role: 'user', author: 'a', text: `m${i}`, tokens: 20, contextTokens: 20 });
  }
  return channels;
}

describe('ChannelCompactor emergencies', () => {
  it('truncates at once and queues the heal', async () => {
    const channels = await channelWith(50); // 1,000 of 1,000 tokens
    const queue = new RecordingQueue();
    const compactor = compactorOn(channels, queue);
    const result = await compactor.afterTurn(KEY, await channels.loadContext(KEY), settings, UNCALIBRATED);
    expect(result.action).toEqual({ kind: 'emergency' });
    expect(result.context?.spans.map((s) => s.kind)).toEqual(['truncated']);
    expect(queue.jobs).toMatchObject([{ tier: 'emergency', fromSeq: 1 }]);
  });

  it('decides again, and cuts nothing, when a splice landed after the decision was made', async () => {
    const channels = await channelWith(50);
    const decidedOn = await channels.loadContext(KEY); // generation 0, usage 1.0
    await channels.splice(KEY, { jobId: 'worker-pass', fromSeq: 1, toSeq: 40, text: 'S', tokens: 30 });
    const compactor = compactorOn(channels);
    const result = await compactor.afterTurn(KEY, decidedOn, settings, UNCALIBRATED);
    expect(result.action).toEqual({ kind: 'emergency' });
    // The caller gets the stored context back, with the worker's summary and no cut.
    expect(result.context?.generation).toBe(1);
    expect(result.context?.spans.map((s) => s.kind)).toEqual(['summary']);
  });

  it('records the job an escalation replaced as skipped, also when it was between tries', async () => {
    const channels = await channelWith(43); // 860 of 1,000 tokens: past the aggressive threshold
    const runs = new InMemoryRunStore();
    const range = {
      channelKey: KEY,
      tier: 'background',
      usage: 0.8,
      fromSeq: 1,
      toSeq: 10,
      generation: 0,
    } as const;
    await runs.create({ ...range, jobId: 'waiting' });
    await runs.start('waiting'); // its first try failed; it waits out the retry backoff
    const escalating = new RecordingQueue();
    escalating.enqueue = async (job) => {
      escalating.jobs.push(job);
      return { kind: 'escalated', jobId: 'urgent', replacedJobId: 'waiting' };
    };
    const compactor = new ChannelCompactor({ channels, runs, queue: escalating, markerTokens: 10 });
    await compactor.afterTurn(KEY, await channels.loadContext(KEY), settings, UNCALIBRATED);
    expect(escalating.jobs).toMatchObject([{ tier: 'aggressive' }]);
    expect(await runs.get('waiting')).toMatchObject({ status: 'skipped', error: 'escalated' });
  });
});

/** `calls` tool turns (a call, then its 170-token result) after `before` 20-token messages. */
async function channelWithToolResults(before: number, calls: number) {
  const channels = await channelWith(before);
  for (let i = 0; i < calls; i++) {
    const id = `call-${i}`;
    await channels.append(KEY, {
      role: 'assistant',
      author: 'ebb',
      text: '',
      toolCalls: [{ id, name: 'ci.build_log', arguments: '{}' }],
      tokens: 10,
      contextTokens: 10,
    });
    const text = `build ${i} failed\n${'x'.repeat(780)}`;
    await channels.append(KEY, {
      role: 'tool',
      author: 'ci',
      text,
      toolCallId: id,
      tokens: 170,
      contextTokens: 170,
    });
  }
  return channels;
}

describe('ChannelCompactor microcompaction', () => {
  it('stubs the tool results older than the newest three, in the store too, and queues nothing', async () => {
    // 5 × (10 + 170) = 900 tokens of a 1,000-token budget is past the aggressive threshold; two stubs
    // alone bring it under the background threshold, so no pass follows.
    const channels = await channelWithToolResults(0, 5);
    const queue = new RecordingQueue();
    const events: CompactionLogEvent[] = [];
    const compactor = new ChannelCompactor({
      channels,
      runs: new InMemoryRunStore(),
      queue,
      markerTokens: 10,
      onEvent: (e) => events.push(e),
    });
    const smallResults = {
      ...settings,
      policy: { ...policy, microcompactMinTokens: 100 },
    };
    const result = await compactor.afterTurn(
      KEY,
      await channels.loadContext(KEY),
      smallResults,
      UNCALIBRATED,
    );
    const stubbed = result.context?.raw.filter((m) => m.stubbed).map((m) => m.seq);
    expect(stubbed).toEqual([2, 4]);
    expect(result.context?.raw.find((m) => m.seq === 2)?.text).toMatch(
      /^\[tool result of ci\.build_log, 170 tokens, archived as #2: build 0 failed\]/,
    );
    expect(result.action).toEqual({ kind: 'none' });
    expect(queue.jobs).toEqual([]);
    expect(result.usage).toBeLessThan(0.8);
    // The store holds the same context, and the archive the whole result with its stub beside it.
    expect(await channels.loadContext(KEY)).toEqual(result.context);
    const [archived] = await channels.readArchive(KEY, 2, 2);
    expect(archived?.text).toMatch(/^build 0 failed\nxxx/);
    expect(archived?.stub?.text).toBe(result.context?.raw.find((m) => m.seq === 2)?.text);
    expect(events).toMatchObject([
      {
        event: 'compaction.microcompacted',
        tier: 'microcompact',
        fromSeq: 2,
        toSeq: 4,
        messagesCompacted: 2,
      },
    ]);
  });

  it('truncates after stubbing when the stubs are not enough', async () => {
    const channels = await channelWithToolResults(45, 4); // 900 + 840: stubbing one result leaves 1,5xx
    const compactor = compactorOn(channels);
    const result = await compactor.afterTurn(KEY, await channels.loadContext(KEY), settings, UNCALIBRATED);
    expect(result.action).toEqual({ kind: 'emergency' });
    expect(result.context?.spans.map((s) => s.kind)).toEqual(['truncated']);
  });

  it('stubs nothing when microcompaction is off', async () => {
    const channels = await channelWithToolResults(0, 5);
    const compactor = compactorOn(channels);
    const off = {
      ...settings,
      policy: { ...policy, microcompactMinTokens: 100, microcompaction: false },
    };
    const result = await compactor.afterTurn(KEY, await channels.loadContext(KEY), off, UNCALIBRATED);
    expect(result.context?.raw.some((m) => m.stubbed) ?? false).toBe(false);
  });
});

describe('ChannelCompactor after passes land', () => {
  /** A background pass that spliced `before` context tokens down to `after`, recorded as the worker records it. */
  async function landed(runs: InMemoryRunStore, jobId: string, before: number, after: number) {
    await runs.create({
      jobId,
      channelKey: KEY,
      tier: 'background',
      usage: 0.9,
      fromSeq: 1,
      toSeq: 5,
      generation: 0,
    });
    await runs.finish(jobId, { status: 'completed', tokensBefore: before, tokensAfter: after });
  }

  it("judges each landing on the store's figures at its splice, whatever context the caller holds", async () => {
    // 820 of 1,000 tokens: over the background threshold after every landing, so only the
    // judgement decides whether the channel keeps queueing.
    const channels = await channelWith(41);
    let clock = 0;
    const runs = new InMemoryRunStore({ now: () => (clock += 1_000) });
    const queue = new RecordingQueue();
    const events: CompactionLogEvent[] = [];
    const compactor = new ChannelCompactor({
      channels,
      runs,
      queue,
      markerTokens: 10,
      onEvent: (e) => events.push(e),
    });
    const afterTurn = async () =>
      (await compactor.afterTurn(KEY, await channels.loadContext(KEY), settings, UNCALIBRATED)).action;

    // Four passes that each freed 0.15 of usage (at least half of the 30% a background pass aims at)
    // though usage stayed over the threshold: the channel keeps queueing.
    for (let i = 1; i <= 4; i++) {
      await landed(runs, `helped-${i}`, 990, 840);
      await compactor.contextChanged(KEY, settings, UNCALIBRATED);
      expect(await afterTurn()).toMatchObject({ kind: 'enqueue' });
    }
    // Three that freed 0.01 each: it stops.
    for (let i = 1; i <= 3; i++) {
      await landed(runs, `freed-little-${i}`, 990, 980);
      await compactor.contextChanged(KEY, settings, UNCALIBRATED);
    }
    expect(await afterTurn()).toMatchObject({ kind: 'skip', reason: 'ineffective' });
    // Passes that landed together are judged together: 0.05 + 0.1 freed of 0.99 helped.
    await landed(runs, 'together-1', 990, 940);
    await landed(runs, 'together-2', 940, 840);
    await compactor.contextChanged(KEY, settings, UNCALIBRATED);
    expect(await afterTurn()).toMatchObject({ kind: 'enqueue' });
    expect(events.filter((e) => e.event === 'compaction.skipped').map((e) => e.reason)).toEqual([
      'ineffective',
    ]);
  });

  it('queues again once usage has grown by background_fraction since passes stopped helping', async () => {
    // A working size far below the window (passes from 0.3): 16 messages, 320 of 1,000 tokens.
    const low = { ...settings, policy: { ...policy, backgroundThreshold: 0.3 } };
    const channels = await channelWith(16);
    let clock = 0;
    const runs = new InMemoryRunStore({ now: () => (clock += 1_000) });
    const compactor = new ChannelCompactor({ channels, runs, queue: new RecordingQueue(), markerTokens: 10 });
    const afterTurn = async () =>
      (await compactor.afterTurn(KEY, await channels.loadContext(KEY), low, UNCALIBRATED)).action;
    for (let i = 1; i <= 3; i++) {
      await landed(runs, `freed-little-${i}`, 330, 320);
      await compactor.contextChanged(KEY, low, UNCALIBRATED);
    }
    expect(await afterTurn()).toMatchObject({ kind: 'skip', reason: 'ineffective' });
    const add = async (n: number) => {
      for (let i = 0; i < n; i++)
        await channels.append(KEY, {
          role: 'user',
          author: 'a',
          text: 'more',
          tokens: 20,
          contextTokens: 20,
        });
    };
    // 0.40: under 0.32 × 1.3 = 0.416, still held back.
    await add(4);
    expect(await afterTurn()).toMatchObject({ kind: 'skip', reason: 'ineffective' });
    // 0.42: it has grown by 30% since, and holds new messages a pass can take.
    await add(1);
    expect(await afterTurn()).toMatchObject({ kind: 'enqueue' });
  });
});

describe('ChannelCompactor under a working size', () => {
  // 400 tokens of a 1,000-token budget set the background threshold at 0.4.
  const working = { ...settings, policy: { ...policy, backgroundThreshold: 0.4, workingTokens: 400 } };
  const afterTurn = async (messages: number, factor: number) => {
    const channels = await channelWith(messages);
    const queue = new RecordingQueue();
    const compactor = compactorOn(channels, queue);
    const result = await compactor.afterTurn(KEY, await channels.loadContext(KEY), working, {
      factor,
      samples: 10,
    });
    return result.action.kind;
  };

  it('queues a pass once either its own count or the provider’s reaches the working size', async () => {
    // 21 messages are 420 of Ebb's tokens. A provider that counts 0.6 of that (210) does not hold
    // the channel under the working size by Ebb's count.
    expect(await afterTurn(21, 0.6)).toBe('enqueue');
    expect(await afterTurn(19, 0.6)).toBe('none');
    // One that counts more (framing Ebb cannot see) brings the pass earlier: 15 messages, 300 × 1.4.
    expect(await afterTurn(15, 1.4)).toBe('enqueue');
    expect(await afterTurn(13, 1.4)).toBe('none');
  });
});

describe('ChannelCompactor on a silence', () => {
  it('queues a pass for a cold channel due soon, says why, and none for one far from due', async () => {
    const events: CompactionLogEvent[] = [];
    const due = await channelWith(33); // 660 of 1,000: under the background threshold, above 0.75 of it
    const queue = new RecordingQueue();
    const compactor = new ChannelCompactor({
      channels: due,
      runs: new InMemoryRunStore(),
      queue,
      markerTokens: 10,
      onEvent: (e) => events.push(e),
    });
    // After the turn nothing is due: the threshold is 0.8.
    const turn = await compactor.afterTurn(KEY, await due.loadContext(KEY), settings, UNCALIBRATED);
    expect(turn.action).toEqual({ kind: 'none' });
    expect(queue.jobs).toEqual([]);
    const cold = await compactor.onSilence(KEY, await due.loadContext(KEY), settings, UNCALIBRATED);
    expect(cold.jobId).toBe('job-1');
    expect(queue.jobs).toMatchObject([{ tier: 'background', fromSeq: 1 }]);
    expect(events.filter((e) => e.event === 'compaction.triggered')).toMatchObject([
      { tier: 'background', reason: 'cache_cold', usage: 0.66 },
    ]);

    const far = await channelWith(20); // 400 of 1,000
    const farQueue = new RecordingQueue();
    const quiet = compactorOn(far, farQueue);
    expect(await quiet.onSilence(KEY, await far.loadContext(KEY), settings, UNCALIBRATED)).toEqual({});
    expect(farQueue.jobs).toEqual([]);
  });
});
