import { setTimeout as sleepFor } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { compactionQueueContract } from '../test/compaction-queue.contract.js';
import { InlineCompactionQueue } from './inline-compaction-queue.js';
import type { CompactionJobContext } from './job-driver.js';

compactionQueueContract('InlineCompactionQueue', async (processor, { attempts }) => {
  // Retry backoffs pass at once; a long wait (a cooldown delay) is real and ends early when aborted.
  const sleep = (ms: number, signal: AbortSignal) =>
    ms >= 10_000 ? sleepFor(ms, undefined, { signal }) : Promise.resolve();
  const queue = new InlineCompactionQueue({ processor, jobOptions: { attempts }, sleep });
  return { queue, other: queue, events: queue, keepsFinishedJobs: false, close: () => queue.close() };
});

const job = { channelKey: 'web:1', tier: 'background', fromSeq: 1, toSeq: 5, generation: 0 } as const;

describe('InlineCompactionQueue', () => {
  it('returns from enqueue before the job starts', async () => {
    const calls: CompactionJobContext[] = [];
    const queue = new InlineCompactionQueue({ processor: async (ctx) => calls.push(ctx) });
    const outcome = await queue.enqueue(job);
    expect(outcome.kind).toBe('enqueued');
    expect(calls).toEqual([]);
    await queue.drain();
    expect(calls).toHaveLength(1);
    await queue.close();
  });

  it('waits the exponential backoff between attempts, through the injected sleep', async () => {
    const waits: number[] = [];
    let tries = 0;
    const queue = new InlineCompactionQueue({
      processor: async () => {
        tries += 1;
        if (tries < 4) throw new Error('flaky');
      },
      jobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 100, jitter: 0 } },
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    await queue.enqueue(job);
    await queue.drain();
    expect(waits).toEqual([100, 200, 400]);
    expect(tries).toBe(4);
  });

  it('replaces a job waiting out its backoff with a more urgent one', async () => {
    const calls: CompactionJobContext[] = [];
    let wake = () => {};
    const queue = new InlineCompactionQueue({
      processor: async (ctx) => {
        calls.push(ctx);
        if (ctx.tier === 'background') throw new Error('flaky');
      },
      sleep: (_ms, signal) =>
        new Promise((resolve, reject) => {
          wake = resolve;
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    });
    const first = await queue.enqueue(job);
    await vi.waitFor(() => expect(calls).toHaveLength(1));
    await vi.waitFor(async () =>
      expect(await queue.inFlight(job.channelKey)).toMatchObject([{ running: false }]),
    );
    const second = await queue.enqueue({ ...job, tier: 'aggressive', toSeq: 9 });
    expect(second).toMatchObject({ kind: 'escalated', replacedJobId: first.jobId });
    wake();
    await queue.drain();
    expect(calls.map((c) => [c.tier, c.attempt])).toEqual([
      ['background', 1],
      ['aggressive', 1],
    ]);
  });

  it('runs the most urgent waiting job first', async () => {
    const order: string[] = [];
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const queue = new InlineCompactionQueue({
      processor: async (ctx) => {
        order.push(ctx.channelKey);
        if (ctx.channelKey === 'web:blocker') await gate;
      },
    });
    await queue.enqueue({ ...job, channelKey: 'web:blocker' });
    await vi.waitFor(() => expect(order).toEqual(['web:blocker']));
    await queue.enqueue({ ...job, channelKey: 'web:a' });
    await queue.enqueue({ ...job, channelKey: 'web:b', tier: 'emergency' });
    await queue.enqueue({ ...job, channelKey: 'web:c', tier: 'aggressive' });
    release();
    await queue.drain();
    expect(order).toEqual(['web:blocker', 'web:b', 'web:c', 'web:a']);
  });

  it('close drops jobs that have not started, waits for the running one, then refuses new ones', async () => {
    const order: string[] = [];
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const queue = new InlineCompactionQueue({
      processor: async (ctx) => {
        order.push(ctx.channelKey);
        await gate;
      },
    });
    await queue.enqueue({ ...job, channelKey: 'web:a' });
    await vi.waitFor(() => expect(order).toEqual(['web:a']));
    await queue.enqueue({ ...job, channelKey: 'web:b' });
    let closed = false;
    const closing = queue.close().then(() => {
      closed = true;
    });
    await Promise.resolve();
    expect(closed).toBe(false);
    release();
    await closing;
    expect(order).toEqual(['web:a']);
    await expect(queue.enqueue(job)).rejects.toMatchObject({ code: 'queue_closed' });
  });

  it('does not count a throwing event listener as a failed attempt', async () => {
    let runs = 0;
    const queue = new InlineCompactionQueue({
      processor: async () => {
        runs += 1;
      },
      sleep: async () => {},
    });
    const failed: unknown[] = [];
    queue.on('failed', (e) => failed.push(e));
    queue.on('completed', () => {
      throw new Error('listener bug');
    });
    await queue.enqueue(job);
    await queue.drain();
    expect(failed).toEqual([]);
    expect(runs).toBe(1);
  });
});
