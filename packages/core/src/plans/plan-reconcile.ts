/**
 * What to do with a compaction run that is still `queued` or `running` after its job can no longer
 * finish it: the reconciler's decision, pure so it can be tested case by case (the worker applies
 * it, see `packages/compaction/src/reconciler.ts`).
 *
 * | the job is… | because… | the run becomes |
 * |-------------|----------|-----------------|
 * | pending or active | it will run (a lost lock is BullMQ's stalled check's business) | left alone |
 * | missing, run older than `missingGraceMs` | Redis lost it (restart without persistence), or the in-process queue died with its process | enqueued again as it was: same range, generation, `focus` and `after`; the worker checks the range still stands |
 * | missing, run older than `requeueWithinMs` | as above, long ago: its range has certainly moved on | `stale` (`job_lost`) |
 * | failed for good, run older than `graceMs` | the worker could not record the failure (Postgres down then) | `failed` (feeds the breaker) |
 * | completed, run older than `graceMs` | the job ended but its run was not recorded | `stale` (`job_completed_unrecorded`) |
 *
 * A missing job is acted on soon: the bot enqueues the job before it records the run, so a recorded
 * run whose job Redis does not have lost it (the one exception, a job replaced by an escalation, is
 * marked `skipped` a moment later, and a requeue of it is deduplicated against the pass that
 * replaced it). A job that failed or completed is left longer to the worker, which records those
 * itself unless Postgres is away.
 */
import type { CompactionJob, CompactionRun, JobState } from '../ports/ports.js';

export interface ReconcilePolicy {
  /** A run whose job is missing is enqueued again once this old. */
  readonly missingGraceMs: number;
  /** A run whose job failed or completed without the run being recorded is settled once this old. */
  readonly graceMs: number;
  /** A run whose job is missing is enqueued again while younger than this, else marked stale. */
  readonly requeueWithinMs: number;
}

export const DEFAULT_RECONCILE_POLICY = {
  missingGraceMs: 30_000,
  graceMs: 5 * 60_000,
  requeueWithinMs: 60 * 60_000,
} as const satisfies ReconcilePolicy;

/** The youngest run any rule acts on: the reconciler reads the runs created before `now` minus this. */
export function reconcileAfterMs(policy: ReconcilePolicy): number {
  return Math.min(policy.missingGraceMs, policy.graceMs);
}

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
  switch (job) {
    case 'pending':
    case 'active':
      return { kind: 'leave' };
    case 'failed':
      if (age < policy.graceMs) return { kind: 'leave' };
      return { kind: 'finish', status: 'failed', reason: 'job_failed' };
    case 'completed':
      if (age < policy.graceMs) return { kind: 'leave' };
      return { kind: 'finish', status: 'stale', reason: 'job_completed_unrecorded' };
    case 'missing':
      if (age < policy.missingGraceMs) return { kind: 'leave' };
      if (age >= policy.requeueWithinMs) return { kind: 'finish', status: 'stale', reason: 'job_lost' };
      return {
        kind: 'requeue',
        job: {
          channelKey: run.channelKey,
          tier: run.tier,
          fromSeq: run.fromSeq,
          toSeq: run.toSeq,
          generation: run.generation,
          ...(run.focus === undefined ? {} : { focus: run.focus }),
          ...(run.after === undefined ? {} : { after: run.after }),
        },
      };
  }
}
