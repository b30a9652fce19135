/**
 * A pass that failed (`compaction-processor.ts` reports every failure but a deferral, then rethrows
 * to its driver): its `compaction.failed` line with what the failed try cost, the error code the
 * runs and events carry, and the run marked failed after the driver's last try (`recordFailure`, the
 * drivers in `run-worker.ts` and `embedded-pipeline.ts` call it).
 */
import { callsCost, EbbError, type LlmCall, type RunStore, SummarizerGaveUpError } from '@ebb/core';
import type { Pass, Prices, Processor } from './pass-context.js';

/**
 * The driver retries or gives up; `recordFailure` then marks the run (see run-worker.ts). The calls
 * a summarizer made before it gave up are what the failed try cost.
 */
export function reportFailure(p: Processor, pass: Pass, err: unknown, prices: Prices): void {
  const spent =
    err instanceof SummarizerGaveUpError && err.calls.length > 0
      ? { model: (err.calls.at(-1) as LlmCall).model, ...callsCost(err.calls, prices) }
      : {};
  p.emit({
    event: 'compaction.failed',
    ...pass.event,
    error: errorCode(err),
    durationMs: p.now() - pass.started,
    ...spent,
  });
}

/** The code of the first `EbbError` in the error or its causes (drivers wrap errors, e.g. BullMQ's UnrecoverableError). */
export function errorCode(err: unknown): string {
  for (
    let e: unknown = err, depth = 0;
    e !== undefined && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (e instanceof EbbError) return e.code;
    if (typeof e !== 'object' || e === null) break;
  }
  return 'internal_error';
}

/**
 * After the driver's last try of a job failed: the run is marked failed (this feeds the circuit
 * breaker), unless it ended already. The driver also reports a job whose pass completed when only
 * its own Redis steps after it failed (BullMQ's move to completed, with Redis away or restarted
 * empty): such a run stays `completed`.
 */
export async function recordFailure(
  runs: Pick<RunStore, 'finish'>,
  jobId: string,
  err: unknown,
): Promise<void> {
  await runs.finish(jobId, { status: 'failed', error: errorCode(err) }, { onlyFrom: ['queued', 'running'] });
}
