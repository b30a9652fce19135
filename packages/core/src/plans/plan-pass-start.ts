/**
 * Whether a compaction pass goes ahead when a worker takes its job, decided on the channel's recorded
 * runs, and what a pass records on its run for those rules to read: pure rules over runs the worker
 * has read (`packages/compaction/src/compaction-processor.ts` reads them and carries the answer out),
 * beside `planReconcile`.
 *
 * - **The circuit breaker**: after `failures` attempted passes in a row failed (a pass the extractive
 *   fallback completed because the LLM failed counts as failed: a provider that is down is down for
 *   every pass), the channel's passes are skipped until `pauseMs` after the newest of them. Such a
 *   pass's run keeps the fallback's cause as its error (`passRunFigures`): that is what counts it.
 * - **A follow-up waits for the pass ahead of it** (its `after`) while that one is queued or running,
 *   for at most `FOLLOW_UP_MAX_WAIT_MS` from its enqueue; then it goes on (and its splice finds out
 *   whether the range still stands).
 * - **A background pass with tries left may wait for the LLM** (`passCanWait`); any other lands on
 *   the extractive fallback, so the channel shrinks.
 */
import type { Tier } from '../model/model.js';
import { FINISHED_RUN_STATUSES } from '../model/run-status.js';
import type { CompactionRun, RunStatus, SummaryOutput } from '../ports/ports.js';

export interface CircuitBreakerOptions {
  /**
   * This many failed runs in a row open the breaker; a pass the extractive fallback completed
   * because the LLM failed counts as failed here (a provider that is down is down for every pass).
   */
  readonly failures: number;
  /** For this long after the last failure. */
  readonly pauseMs: number;
}

export const DEFAULT_CIRCUIT_BREAKER = {
  failures: 3,
  pauseMs: 10 * 60_000,
} as const satisfies CircuitBreakerOptions;

/** A follow-up waits at most this long (from its enqueue) for the pass ahead of it; then it is stale. */
export const FOLLOW_UP_MAX_WAIT_MS = 10 * 60_000;

/** Runs that were attempted: skipped runs never were. */
const ATTEMPTED: ReadonlySet<RunStatus> = new Set(['completed', 'stale', 'failed']);

/**
 * Open when the channel's last `failures` attempted runs other than `jobId`'s (by when they
 * finished) all failed, and the newest of them finished less than the pause before `now`.
 */
export function circuitOpen(
  recent: readonly CompactionRun[],
  jobId: string,
  breaker: CircuitBreakerOptions,
  now: number,
): boolean {
  const attempted = recent
    .filter((r) => r.jobId !== jobId && ATTEMPTED.has(r.status) && r.finishedAt !== undefined)
    .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0))
    .slice(0, breaker.failures);
  if (attempted.length < breaker.failures || !attempted.every(failedPass)) return false;
  return now - (attempted[0]?.finishedAt ?? 0) < breaker.pauseMs;
}

function failedPass(run: CompactionRun): boolean {
  return (
    run.status === 'failed' ||
    (run.status === 'completed' && run.fallback === true && run.error !== undefined)
  );
}

/**
 * Whether a follow-up (a job with `after`) should wait: the run ahead of it (`ahead`, undefined when
 * none is recorded) is not finished, and the follow-up has not waited too long since `enqueuedAt`.
 */
export function waitsForPredecessor(
  job: { readonly after?: string | undefined },
  ahead: CompactionRun | undefined,
  enqueuedAt: number,
  now: number,
): boolean {
  if (job.after === undefined || now - enqueuedAt > FOLLOW_UP_MAX_WAIT_MS) return false;
  return ahead !== undefined && !FINISHED_RUN_STATUSES.has(ahead.status);
}

/**
 * Whether the pass may wait for the LLM rather than land on the extractive fallback now: only a
 * background pass (the channel is below the aggressive threshold) with tries left (`lastAttempt`
 * false: a job whose driver does not say may not wait). A higher tier, or the last try, takes the
 * fallback so the channel shrinks.
 */
export function passCanWait(job: {
  readonly tier: Tier;
  readonly lastAttempt?: boolean | undefined;
}): boolean {
  return job.tier === 'background' && job.lastAttempt === false;
}

/**
 * What the run records of a pass's calls and summary, whatever its outcome: the model, the tokens
 * its calls spent and, for a summary the fallback wrote, why (the first failed call's code), which
 * the circuit breaker counts as a failed pass.
 */
export function passRunFigures(
  output: Pick<SummaryOutput, 'model' | 'fallback' | 'calls'>,
  figures: { readonly summaryTokens: number; readonly memoriesAdded: number; readonly durationMs: number },
) {
  const fallbackCause = output.fallback ? output.calls.find((c) => c.error !== undefined)?.error : undefined;
  return {
    model: output.model,
    fallback: output.fallback,
    ...(fallbackCause === undefined ? {} : { error: fallbackCause }),
    inputTokens: output.calls.reduce((n, c) => n + c.inputTokens, 0),
    outputTokens: output.calls.reduce((n, c) => n + c.outputTokens, 0),
    summaryTokens: figures.summaryTokens,
    memoriesAdded: figures.memoriesAdded,
    durationMs: figures.durationMs,
  };
}
