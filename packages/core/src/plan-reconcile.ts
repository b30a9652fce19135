/**
 * What to do with a compaction run that is still `queued` or `running` long after it was created:
 * the reconciler's decision, pure so it can be tested case by case (the worker applies it, see
 * `workers/compaction/src/reconciler.ts`).
 *
 * A run is stuck when its job cannot finish it any more:
 *
 * | the job is… | because… | the run becomes |
 * |-------------|----------|-----------------|
 * | pending or active | it will run (a lost lock is BullMQ's stalled check's business) | left alone |
 * | failed for good | the worker could not record the failure (Postgres down then) | `failed` (feeds the breaker) |
 * | completed | the job ended but its run was not recorded | `stale` (`job_completed_unrecorded`) |
 * | missing, run young | Redis lost it (restart without persistence) or a bot died between enqueue and record | enqueued again: same range, same generation; the worker checks the range still stands |
 * | missing, run old | as above, long ago: its range has certainly moved on | `stale` (`job_lost`) |
 *
 * A run younger than `graceMs` is never touched: the bot enqueues the job first and records the run
 * after, and a job may wait its turn in a busy queue.
 */
import type { CompactionJob, CompactionRun, JobState } from './ports.js';

export interface ReconcilePolicy {
  /** Runs younger than this are left alone. */
  readonly graceMs: number;
  /** A run whose job is missing is enqueued again while younger than this, else marked stale. */
  readonly requeueWithinMs: number;
}

export const DEFAULT_RECONCILE_POLICY = {
  graceMs: 5 * 60_000,
  requeueWithinMs: 60 * 60_000,
} as const satisfies ReconcilePolicy;

export type ReconcileAction =
  | { readonly kind: 'leave' }
  | { readonly kind: 'requeue'; readonly job: CompactionJob }
  | { readonly kind: 'finish'; readonly status: 'failed' | 'stale'; readonly reason: string };

export function planReconcile(
  run: CompactionRun,
  job: JobState,
  now: number,
  policy: ReconcilePolicy = DEFAULT_RECONCILE_POLICY,
): ReconcileAction {
  if (run.status !== 'queued' && run.status !== 'running') return { kind: 'leave' };
  const age = now - (run.createdAt ?? 0);
  if (age < policy.graceMs) return { kind: 'leave' };
  switch (job) {
    case 'pending':
    case 'active':
      return { kind: 'leave' };
    case 'failed':
      return { kind: 'finish', status: 'failed', reason: 'job_failed' };
    case 'completed':
      return { kind: 'finish', status: 'stale', reason: 'job_completed_unrecorded' };
    case 'missing':
      if (age >= policy.requeueWithinMs) return { kind: 'finish', status: 'stale', reason: 'job_lost' };
      return {
        kind: 'requeue',
        job: {
          channelKey: run.channelKey,
          tier: run.tier,
          fromSeq: run.fromSeq,
          toSeq: run.toSeq,
          generation: run.generation,
        },
      };
  }
}
