/**
 * One suite of compaction queue semantics, run against every driver: BullMQ (real Redis, a real
 * worker) and the in-process queue. Jobs are held back without sleeping: the processor blocks on a
 * per-channel gate, and a driver runs one job at a time, so jobs enqueued while a "blocker" channel
 * runs stay waiting. "Never ran" is checked after a later sentinel job has run.
 */
import type { EventEmitter } from 'node:events';
import type { CompactionJob, CompactionQueue } from '@ebb/core';
import { EbbError, PassDeferredError, SummarizerGaveUpError } from '@ebb/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidCompactionPayloadError } from '../src/compaction-jobs.js';
import type {
  CompactionEvents,
  CompactionFailedEvent,
  CompactionJobContext,
  CompactionProcessor,
} from '../src/job-driver.js';

export interface QueueHarness {
  readonly queue: CompactionQueue;
  /** A second producer on the same queue (another bot), when the driver has such a thing. */
  readonly other: CompactionQueue;
  readonly events: EventEmitter<CompactionEvents>;
  /** Whether the driver remembers finished jobs (BullMQ keeps them a while; the in-process queue forgets them). */
  readonly keepsFinishedJobs: boolean;
  close(): Promise<void>;
}

/** Builds a driver that runs one job at a time with `attempts` tries and a negligible backoff. */
export type MakeHarness = (
  processor: CompactionProcessor,
  options: { attempts: number },
) => Promise<QueueHarness>;

const WAIT = { timeout: 15_000, interval: 10 };

function job(channelKey: string, tier: CompactionJob['tier'], toSeq = 10, fromSeq = 1): CompactionJob {
  return { channelKey, tier, fromSeq, toSeq, generation: 1 };
}

class Recorder {
  readonly calls: CompactionJobContext[] = [];
  readonly #gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  readonly #failures = new Map<string, unknown[]>();

  readonly processor: CompactionProcessor = async (ctx) => {
    this.calls.push(ctx);
    await this.#gates.get(ctx.channelKey)?.promise;
    const failure = this.#failures.get(ctx.channelKey)?.shift();
    if (failure !== undefined) throw failure;
    return { summarized: ctx.toSeq - ctx.fromSeq + 1 };
  };

  gate(channelKey: string): () => void {
    let open = () => {};
    const promise = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.#gates.set(channelKey, { promise, open });
    return open;
  }

  openAll(): void {
    for (const gate of this.#gates.values()) gate.open();
  }

  failWith(channelKey: string, ...errors: unknown[]): void {
    this.#failures.set(channelKey, errors);
  }

  of(channelKey: string): CompactionJobContext[] {
    return this.calls.filter((c) => c.channelKey === channelKey);
  }
}

export function compactionQueueContract(name: string, make: MakeHarness): void {
  describe(`${name}: CompactionQueue contract`, () => {
    let harness: QueueHarness | undefined;
    let recorder: Recorder;

    async function start(attempts = 5): Promise<QueueHarness> {
      recorder = new Recorder();
      harness = await make(recorder.processor, { attempts });
      return harness;
    }

    /** Runs a blocker job and waits until it is running, so what is enqueued next waits. */
    async function block(h: QueueHarness): Promise<() => void> {
      const release = recorder.gate('test:blocker');
      await h.queue.enqueue(job('test:blocker', 'background'));
      await vi.waitFor(() => expect(recorder.of('test:blocker')).toHaveLength(1), WAIT);
      return release;
    }

    /** Enqueues a background sentinel and waits until it ran: everything enqueued before it has run. */
    async function settle(h: QueueHarness): Promise<void> {
      const key = `test:sentinel-${recorder.calls.length}`;
      await h.queue.enqueue(job(key, 'background'));
      await vi.waitFor(() => expect(recorder.of(key)).toHaveLength(1), WAIT);
    }

    function failures(h: QueueHarness): CompactionFailedEvent[] {
      const seen: CompactionFailedEvent[] = [];
      h.events.on('failed', (e) => seen.push(e));
      return seen;
    }

    afterEach(async () => {
      recorder?.openAll();
      await harness?.close();
      harness = undefined;
    });

    it('runs an enqueued job once, with its payload, job id and attempt 1', async () => {
      const h = await start();
      const outcome = await h.queue.enqueue({ ...job('slack:T1:C1', 'background', 40), focus: 'decisions' });
      expect(outcome.kind).toBe('enqueued');
      await vi.waitFor(() => expect(recorder.calls).toHaveLength(1), WAIT);
      expect(recorder.calls[0]).toEqual({
        channelKey: 'slack:T1:C1',
        tier: 'background',
        fromSeq: 1,
        toSeq: 40,
        generation: 1,
        focus: 'decisions',
        jobId: outcome.jobId,
        attempt: 1,
        lastAttempt: false,
      });
      await vi.waitFor(async () => expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]), WAIT);
    });

    it('tells where a job stands: pending, active, then finished (or forgotten); an unknown id is missing', async () => {
      const h = await start(1);
      expect(await h.queue.jobState('no-such-job')).toBe('missing');
      const release = await block(h);
      const ok = await h.queue.enqueue(job('slack:T1:C1', 'background'));
      recorder.failWith('slack:T1:C2', new EbbError('nope', { code: 'x', retryable: false }));
      const bad = await h.queue.enqueue(job('slack:T1:C2', 'background'));
      expect(await h.queue.jobState(ok.jobId)).toBe('pending');
      const blocker = (await h.queue.inFlight('test:blocker'))[0]?.jobId ?? '';
      expect(await h.queue.jobState(blocker)).toBe('active');
      release();
      await settle(h);
      expect(recorder.of('slack:T1:C2')).toHaveLength(1);
      const finished = (state: 'completed' | 'failed') => (h.keepsFinishedJobs ? state : 'missing');
      await vi.waitFor(
        async () => expect(await h.queue.jobState(ok.jobId)).toBe(finished('completed')),
        WAIT,
      );
      await vi.waitFor(async () => expect(await h.queue.jobState(bad.jobId)).toBe(finished('failed')), WAIT);
    });

    it('keeps one job per channel: a second trigger of the same tier is deduplicated', async () => {
      const h = await start();
      const release = await block(h);
      const first = await h.queue.enqueue(job('slack:T1:C1', 'background', 10));
      const second = await h.other.enqueue(job('slack:T1:C1', 'background', 12));
      expect(first.kind).toBe('enqueued');
      expect(second).toEqual({ kind: 'deduplicated', jobId: first.jobId });
      expect(await h.queue.inFlight('slack:T1:C1')).toEqual([
        { jobId: first.jobId, tier: 'background', fromSeq: 1, toSeq: 10, running: false },
      ]);
      expect(await h.queue.inFlight('slack:T1:C2')).toEqual([]);
      release();
      await settle(h);
      expect(recorder.of('slack:T1:C1').map((c) => c.toSeq)).toEqual([10]);
    });

    it('escalates a waiting lower-tier job and deduplicates a lower trigger after it', async () => {
      const h = await start();
      const release = await block(h);
      const background = await h.queue.enqueue(job('slack:T1:C1', 'background', 10));
      const aggressive = await h.queue.enqueue(job('slack:T1:C1', 'aggressive', 20));
      expect(aggressive).toMatchObject({ kind: 'escalated', replacedJobId: background.jobId });
      expect(aggressive.jobId).not.toBe(background.jobId);
      const emergency = await h.other.enqueue(job('slack:T1:C1', 'emergency', 30));
      expect(emergency).toMatchObject({ kind: 'escalated', replacedJobId: aggressive.jobId });
      const late = await h.queue.enqueue(job('slack:T1:C1', 'aggressive', 40));
      expect(late).toEqual({ kind: 'deduplicated', jobId: emergency.jobId });
      release();
      await settle(h);
      expect(recorder.of('slack:T1:C1').map((c) => [c.tier, c.toSeq, c.jobId])).toEqual([
        ['emergency', 30, emergency.jobId],
      ]);
    });

    it('leaves exactly one job when escalations race', async () => {
      const h = await start();
      const release = await block(h);
      await h.queue.enqueue(job('slack:T1:C1', 'background', 10));
      const outcomes = await Promise.all([
        h.queue.enqueue(job('slack:T1:C1', 'aggressive', 21)),
        h.other.enqueue(job('slack:T1:C1', 'aggressive', 22)),
        h.queue.enqueue(job('slack:T1:C1', 'emergency', 30)),
        h.other.enqueue(job('slack:T1:C1', 'aggressive', 23)),
        h.queue.enqueue(job('slack:T1:C1', 'background', 11)),
      ]);
      expect(outcomes.filter((o) => o.kind === 'enqueued')).toEqual([]);
      expect(outcomes.some((o) => o.kind === 'escalated')).toBe(true);
      release();
      await settle(h);
      const ran = recorder.of('slack:T1:C1');
      expect(ran.map((c) => c.tier)).toEqual(['emergency']);
      // Every outcome points at a job that was either replaced or is the one that ran.
      const replaced = new Set(outcomes.flatMap((o) => (o.kind === 'escalated' ? [o.replacedJobId] : [])));
      for (const o of outcomes) expect(o.jobId === ran[0]?.jobId || replaced.has(o.jobId)).toBe(true);
    });

    it('drops a trigger that arrives while the channel job runs', async () => {
      const h = await start();
      const release = recorder.gate('slack:T1:C1');
      const running = await h.queue.enqueue(job('slack:T1:C1', 'background', 10));
      await vi.waitFor(() => expect(recorder.of('slack:T1:C1')).toHaveLength(1), WAIT);
      const during = await h.other.enqueue(job('slack:T1:C1', 'emergency', 30));
      expect(during).toEqual({ kind: 'deduplicated', jobId: running.jobId });
      expect(await h.queue.inFlight('slack:T1:C1')).toMatchObject([{ jobId: running.jobId, running: true }]);
      release();
      await settle(h);
      expect(recorder.of('slack:T1:C1').map((c) => c.tier)).toEqual(['background']);
      await vi.waitFor(async () => expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]), WAIT);
    });

    it('admits one follow-up over the next disjoint range while a pass runs, and no third pass', async () => {
      const h = await start();
      const release = recorder.gate('slack:T1:C1');
      const head = await h.queue.enqueue(job('slack:T1:C1', 'background', 10));
      await vi.waitFor(() => expect(recorder.of('slack:T1:C1')).toHaveLength(1), WAIT);
      const follow = await h.other.enqueue({
        ...job('slack:T1:C1', 'aggressive', 20, 11),
        after: head.jobId,
      });
      expect(follow.kind).toBe('enqueued');
      const third = await h.queue.enqueue(job('slack:T1:C1', 'aggressive', 30, 21));
      expect(third.kind).toBe('deduplicated');
      expect(await h.queue.inFlight('slack:T1:C1')).toMatchObject([
        { jobId: head.jobId, fromSeq: 1, running: true },
        { jobId: follow.jobId, fromSeq: 11, toSeq: 20 },
      ]);
      release();
      await vi.waitFor(() => expect(recorder.of('slack:T1:C1')).toHaveLength(2), WAIT);
      expect(recorder.of('slack:T1:C1')[1]).toMatchObject({ fromSeq: 11, after: head.jobId });
      await vi.waitFor(async () => expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]), WAIT);
    });

    it('holds a job back by its delay, and an escalation replaces it meanwhile', async () => {
      const h = await start();
      const delayed = await h.queue.enqueue(job('slack:T1:C1', 'background', 10), { delayMs: 60_000 });
      expect(await h.queue.inFlight('slack:T1:C1')).toEqual([
        { jobId: delayed.jobId, tier: 'background', fromSeq: 1, toSeq: 10, running: false },
      ]);
      const urgent = await h.other.enqueue(job('slack:T1:C1', 'aggressive', 20));
      expect(urgent).toEqual({ kind: 'escalated', jobId: urgent.jobId, replacedJobId: delayed.jobId });
      await vi.waitFor(
        () => expect(recorder.of('slack:T1:C1').map((c) => c.tier)).toEqual(['aggressive']),
        WAIT,
      );
    });

    it('runs a deferred job again without spending an attempt or reporting a failure', async () => {
      const h = await start(1);
      const failed = failures(h);
      const completed: string[] = [];
      h.events.on('completed', (e) => completed.push(e.jobId));
      recorder.failWith('slack:T1:C1', new PassDeferredError('waits for the pass ahead', 50));
      const { jobId } = await h.queue.enqueue(job('slack:T1:C1', 'aggressive'));
      await vi.waitFor(() => expect(completed).toEqual([jobId]), WAIT);
      expect(recorder.of('slack:T1:C1').map((c) => c.attempt)).toEqual([1, 1]);
      expect(failed).toEqual([]);
    });

    it("waits out a provider's Retry-After without spending an attempt or reporting a failure", async () => {
      const h = await start(2);
      const failed = failures(h);
      const completed: string[] = [];
      h.events.on('completed', (e) => completed.push(e.jobId));
      const rateLimited = () =>
        new SummarizerGaveUpError(
          Object.assign(new EbbError('429', { code: 'llm_rate_limited', retryable: true }), {
            retryAfterMs: 30,
          }),
          [],
        );
      recorder.failWith('slack:T1:C1', rateLimited(), rateLimited(), rateLimited());
      const { jobId } = await h.queue.enqueue(job('slack:T1:C1', 'background'));
      await vi.waitFor(() => expect(completed).toEqual([jobId]), WAIT);
      expect(recorder.of('slack:T1:C1').map((c) => [c.attempt, c.lastAttempt])).toEqual([
        [1, false],
        [1, false],
        [1, false],
        [1, false],
      ]);
      expect(failed).toEqual([]);
    });

    it('tells the processor which attempt is the last', async () => {
      const h = await start(2);
      recorder.failWith('slack:T1:C1', new EbbError('503', { code: 'x', retryable: true }));
      await h.queue.enqueue(job('slack:T1:C1', 'background'));
      await vi.waitFor(() => expect(recorder.of('slack:T1:C1')).toHaveLength(2), WAIT);
      expect(recorder.of('slack:T1:C1').map((c) => [c.attempt, c.lastAttempt])).toEqual([
        [1, false],
        [2, true],
      ]);
    });

    it('retries a failing job with backoff until it succeeds', async () => {
      const h = await start(5);
      const failed = failures(h);
      const completed: string[] = [];
      h.events.on('completed', (e) => completed.push(`${e.jobId}#${e.attempt}`));
      recorder.failWith(
        'slack:T1:C1',
        new Error('provider timeout'),
        new EbbError('503', { code: 'x', retryable: true }),
      );
      const { jobId } = await h.queue.enqueue(job('slack:T1:C1', 'aggressive'));
      await vi.waitFor(() => expect(completed).toEqual([`${jobId}#3`]), WAIT);
      expect(recorder.of('slack:T1:C1').map((c) => c.attempt)).toEqual([1, 2, 3]);
      expect(failed.map((e) => [e.jobId, e.attempt, e.willRetry])).toEqual([
        [jobId, 1, true],
        [jobId, 2, true],
      ]);
    });

    it('does not retry an error marked retryable: false', async () => {
      const h = await start(5);
      const failed = failures(h);
      recorder.failWith('slack:T1:C1', new EbbError('range is gone', { code: 'range_gone' }));
      const { jobId } = await h.queue.enqueue(job('slack:T1:C1', 'background'));
      await vi.waitFor(() => expect(failed).toHaveLength(1), WAIT);
      expect(failed[0]).toMatchObject({ jobId, attempt: 1, willRetry: false, channelKey: 'slack:T1:C1' });
      await settle(h);
      expect(recorder.of('slack:T1:C1')).toHaveLength(1);
      expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]);
    });

    it('gives up after the last attempt, and the same trigger can run again afterwards', async () => {
      const h = await start(2);
      const failed = failures(h);
      recorder.failWith('slack:T1:C1', new Error('a'), new Error('b'));
      const first = await h.queue.enqueue(job('slack:T1:C1', 'background'));
      await vi.waitFor(() => expect(failed.map((e) => e.willRetry)).toEqual([true, false]), WAIT);
      await vi.waitFor(async () => expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]), WAIT);
      const again = await h.queue.enqueue(job('slack:T1:C1', 'background'));
      expect(again).toEqual({ kind: 'enqueued', jobId: first.jobId });
      await vi.waitFor(() => expect(recorder.of('slack:T1:C1')).toHaveLength(3), WAIT);
    });

    it('rejects a bad payload at enqueue; nothing reaches the processor', async () => {
      const h = await start();
      const bad = { ...job('slack:T1:C1', 'background'), fromSeq: 5, toSeq: 4 };
      await expect(h.queue.enqueue(bad)).rejects.toBeInstanceOf(InvalidCompactionPayloadError);
      const withText = { ...job('slack:T1:C1', 'background'), text: 'secret' } as CompactionJob;
      await expect(h.queue.enqueue(withText)).rejects.toMatchObject({ code: 'invalid_compaction_payload' });
      expect(await h.queue.inFlight('slack:T1:C1')).toEqual([]);
      await settle(h);
      expect(recorder.of('slack:T1:C1')).toEqual([]);
    });
  });
}
