import { describe, expect, it } from 'vitest';
import { testPolicy } from '../test/policy.js';
import { ChannelCompactor } from './channel-compactor.js';
import { InMemoryChannelStore } from './in-memory-channel-store.js';
import { InMemoryRunStore } from './in-memory-run-store.js';
import type { CompactionJob, CompactionQueue, EnqueueOutcome } from './ports.js';
import { UNCALIBRATED } from './tokens.js';

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
const settings = {
  policy: testPolicy({ protectRecent: 2 }),
  contextWindow: 1_100,
  maxOutputTokens: 100,
  reservedTokens: 0,
};

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
    const compactor = new ChannelCompactor({
      channels,
      runs: new InMemoryRunStore(),
      queue,
      markerTokens: 10,
    });
    const result = await compactor.afterTurn(KEY, await channels.loadContext(KEY), settings, UNCALIBRATED);
    expect(result.action).toEqual({ kind: 'emergency' });
    expect(result.context?.spans.map((s) => s.kind)).toEqual(['truncated']);
    expect(queue.jobs).toMatchObject([{ tier: 'emergency', fromSeq: 1 }]);
  });

  it('decides again, and cuts nothing, when a splice landed after the decision was made', async () => {
    const channels = await channelWith(50);
    const decidedOn = await channels.loadContext(KEY); // generation 0, usage 1.0
    await channels.splice(KEY, { jobId: 'worker-pass', fromSeq: 1, toSeq: 40, text: 'S', tokens: 30 });
    const compactor = new ChannelCompactor({
      channels,
      runs: new InMemoryRunStore(),
      queue: new RecordingQueue(),
      markerTokens: 10,
    });
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
