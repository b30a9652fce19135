/**
 * The reconciler: finds compaction runs left `queued` or `running` after their job can no longer
 * finish them, and settles each as core's `planReconcile` decides (enqueue the same range again, or
 * mark it `failed` or `stale` with a reason). One `compaction.reconciled` event per run it touches.
 *
 * How runs get stuck: Redis restarted without persistence (the job is gone), a Postgres outage
 * while the worker recorded a failure, a bot that died between enqueueing a job and recording its
 * run. Stalled jobs (a worker killed mid-pass) are not its business: BullMQ's stalled check moves
 * them back to waiting, and fails them after `maxStalledCount` stalls, which the worker records.
 *
 * It runs in every worker (and in embedded mode, in the bot) at start and every `intervalMs` (15 s),
 * and looks at every unfinished run from 30 s old (`missingGraceMs`): a pass whose job Redis lost is
 * enqueued again within about 45 s of Redis answering again (a round while Redis is away fails and
 * is tried on the next tick). Two reconcilers on one run do no harm: an enqueue of a job that exists
 * again is deduplicated, and a finish only moves a run out of `queued` or `running`.
 */
import {
  type CompactionEventSink,
  type CompactionQueue,
  type CompactionRun,
  DEFAULT_RECONCILE_POLICY,
  planReconcile,
  type ReconcilePolicy,
  type RunStore,
  reconcileAfterMs,
} from '@ebb/core';
import type { Logger } from '@ebb/logger';

export interface ReconcilerOptions {
  readonly runs: Pick<RunStore, 'unfinished' | 'finish'>;
  readonly queue: CompactionQueue;
  readonly policy?: ReconcilePolicy;
  readonly now?: () => number;
  readonly onEvent?: CompactionEventSink;
  /** Runs looked at per round, oldest first. */
  readonly batch?: number;
}

export const DEFAULT_RECONCILER = {
  /** With `missingGraceMs`, how soon a run whose job Redis lost is enqueued again. */
  intervalMs: 15_000,
  batch: 200,
} as const;

export interface ReconcileTally {
  readonly checked: number;
  readonly requeued: number;
  readonly failed: number;
  readonly stale: number;
}

/** One round: every unfinished run old enough for a rule of `planReconcile`, settled or left alone. */
export async function reconcileRuns(options: ReconcilerOptions): Promise<ReconcileTally> {
  const now = options.now ?? Date.now;
  const policy = options.policy ?? DEFAULT_RECONCILE_POLICY;
  const emit = options.onEvent ?? (() => {});
  const tally = { checked: 0, requeued: 0, failed: 0, stale: 0 };
  const candidates = await options.runs.unfinished({
    createdBefore: now() - reconcileAfterMs(policy),
    limit: options.batch ?? DEFAULT_RECONCILER.batch,
  });
  for (const run of candidates) {
    tally.checked += 1;
    const action = planReconcile(run, await options.queue.jobState(run.jobId), now(), policy);
    if (action.kind === 'leave') continue;
    if (action.kind === 'requeue') {
      const outcome = await options.queue.enqueue(action.job);
      if (outcome.kind === 'deduplicated' && outcome.jobId === run.jobId) continue; // back already
      if (outcome.kind === 'deduplicated') {
        // Another pass of the channel holds the range (or every slot): this one will not run.
        await settle(options.runs, run, 'stale', `superseded by ${outcome.jobId}`, emit);
        tally.stale += 1;
        continue;
      }
      if (outcome.kind === 'escalated') {
        await options.runs.finish(
          outcome.replacedJobId,
          { status: 'skipped', error: 'escalated' },
          { onlyFrom: ['queued', 'running'] },
        );
      }
      emit({ ...eventOf(run), action: 'requeued', reason: 'job_missing' });
      tally.requeued += 1;
      continue;
    }
    await settle(options.runs, run, action.status, action.reason, emit);
    tally[action.status] += 1;
  }
  return tally;
}

async function settle(
  runs: Pick<RunStore, 'finish'>,
  run: CompactionRun,
  status: 'failed' | 'stale',
  reason: string,
  emit: CompactionEventSink,
): Promise<void> {
  await runs.finish(run.jobId, { status, error: reason }, { onlyFrom: ['queued', 'running'] });
  emit({ ...eventOf(run), action: status, reason });
}

function eventOf(run: CompactionRun) {
  return {
    event: 'compaction.reconciled',
    channel: run.channelKey,
    tier: run.tier,
    jobId: run.jobId,
    fromSeq: run.fromSeq,
    toSeq: run.toSeq,
  } as const;
}

export interface RunningReconciler {
  /** Stops the timer and waits for a round in progress. */
  stop(): Promise<void>;
}

/**
 * Reconciles now and then every `intervalMs`, one round at a time. A round that cannot reach
 * Postgres or Redis is logged at warn and tried again on the next tick.
 */
export function startReconciler(
  options: ReconcilerOptions & { readonly intervalMs?: number; readonly logger: Logger },
): RunningReconciler {
  const intervalMs = options.intervalMs ?? DEFAULT_RECONCILER.intervalMs;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();
  const tick = () => {
    round = reconcileRuns(options).then(
      () => {},
      (err: unknown) =>
        options.logger.warn(
          { event: 'compaction.reconcile_failed', err },
          'compaction reconciler round failed; next in a while',
        ),
    );
    void round.then(() => {
      if (!stopped) timer = setTimeout(tick, intervalMs).unref();
    });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
    },
  };
}
