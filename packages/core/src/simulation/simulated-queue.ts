/**
 * The passes of a simulated channel as a queue and its workers would hold them: admitted by the same
 * `admitPass` rule as the real queues (a duplicate is refused, a waiting pass of a lower tier is
 * replaced), oldest range first, each started once its delay is over (workers are assumed free) and
 * done `jobLatency` turns or `jobSeconds` seconds of the transcript's clock after it started.
 * `Simulation` carries out what the passes do (their snapshot, their splice) and reports it.
 */
import { admitPass } from '../decision/admit-pass.js';
import type { EnqueueMode } from '../decision/decide-after-turn.js';
import type { CompactionPlan } from '../plans/plan-compaction.js';
import type { SummaryResult } from '../plans/plan-splice.js';
import type { PassInFlight } from '../ports/queue-ports.js';

export interface SimJob {
  readonly id: string;
  readonly plan: CompactionPlan;
  readonly mode: EnqueueMode;
  /** Queued when the channel's cache went cold (`decideOnSilence`), not after a turn. */
  readonly onSilence?: true;
  readonly after?: string;
  readonly enqueuedAt: number;
  readonly startAt: number;
  started?: { readonly turn: number; readonly at: number; readonly result: SummaryResult };
}

/** How long a started pass takes: `jobSeconds` of the clock, or else `jobLatency` turns. */
export interface SimulatedTiming {
  readonly jobLatency: number;
  readonly jobSeconds?: number | undefined;
}

export type Admission =
  | { readonly kind: 'deduplicated'; readonly jobId: string }
  | { readonly kind: 'added'; readonly job: SimJob; readonly replaced?: string };

export class SimulatedQueue {
  readonly #timing: SimulatedTiming;
  /** Passes waiting or running, oldest range first. */
  #jobs: SimJob[] = [];
  #count = 0;

  constructor(timing: SimulatedTiming) {
    this.#timing = timing;
  }

  get size(): number {
    return this.#jobs.length;
  }

  /** The passes waiting or running, oldest range first (a copy: the caller may land them meanwhile). */
  jobs(): readonly SimJob[] {
    return [...this.#jobs];
  }

  has(jobId: string): boolean {
    return this.#jobs.some((j) => j.id === jobId);
  }

  /** What the decision sees of the passes, as a real queue's `inFlight` reports them. */
  inFlight(): PassInFlight[] {
    return this.#jobs.map((j) => ({
      jobId: j.id,
      tier: j.plan.tier,
      fromSeq: j.plan.fromSeq,
      toSeq: j.plan.toSeq,
      running: j.started !== undefined,
    }));
  }

  /** Admits a pass planned at `at` to start `delayMs` later, as `admitPass` rules. */
  add(
    pass: {
      readonly plan: CompactionPlan;
      readonly mode: EnqueueMode;
      readonly after?: string;
      readonly delayMs: number;
    },
    at: number,
    onSilence: boolean,
  ): Admission {
    const admission = admitPass(this.inFlight(), pass.plan);
    if (admission.kind === 'deduplicated') return { kind: 'deduplicated', jobId: admission.jobId };
    if (admission.kind === 'replace') this.#jobs = this.#jobs.filter((j) => j.id !== admission.jobId);
    const job: SimJob = {
      id: `job-${++this.#count}`,
      plan: pass.plan,
      mode: pass.mode,
      ...(pass.after === undefined ? {} : { after: pass.after }),
      ...(onSilence ? { onSilence: true as const } : {}),
      enqueuedAt: at,
      startAt: at + pass.delayMs,
    };
    this.#jobs = [...this.#jobs, job].sort((a, b) => a.plan.fromSeq - b.plan.fromSeq);
    return admission.kind === 'replace'
      ? { kind: 'added', job, replaced: admission.jobId }
      : { kind: 'added', job };
  }

  remove(job: SimJob): void {
    this.#jobs = this.#jobs.filter((j) => j !== job);
  }

  /** When a started pass is done: `jobSeconds` after it started (at once when latency counts turns). */
  doneAt(job: SimJob, now: number): number {
    return (job.started?.at ?? now) + 1000 * (this.#timing.jobSeconds ?? 0);
  }

  /** Whether a started pass is done at `now`, on turn `turn`. */
  due(job: SimJob, now: number, turn: number): boolean {
    const { jobSeconds, jobLatency } = this.#timing;
    const started = job.started;
    if (!started) return false;
    return jobSeconds === undefined
      ? turn >= started.turn + jobLatency
      : now >= started.at + jobSeconds * 1000;
  }
}
