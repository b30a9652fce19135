/**
 * One compaction pass, as the worker runs it:
 *
 *   run started → take-back mark → snapshot of the range → summary + memories (LLM, no lock held)
 *   → memories validated → checkpoint → memories upserted → splice under the channel lock (or
 *   stale) → run finished → context-changed
 *
 * The summarizer's memories are proposals (model output, shaped by whatever the channel said):
 * `validateMemories` repairs or rejects them against the pass's range and the range's authors before
 * they are checkpointed or stored, and one `compaction.memories_invalid` event per pass counts what
 * it did by reason (never the text).
 *
 * Every step is idempotent, so a job killed anywhere and retried ends in the same state once: a run
 * that finished already is left alone; a checkpointed summary is reused instead of asking the LLM
 * again, so the memories it writes have the same fingerprints; a splice of a job already applied is
 * a no-op. A channel whose last passes all failed is paused for a while (circuit breaker).
 *
 * A follow-up pass (`after`: the pass whose range ends right before its own) may finish first; its
 * splice then meets a gap in the prefix. While the pass ahead is still queued or running, the job is
 * deferred (`PassDeferredError`: the driver runs it again shortly without spending an attempt, and
 * the checkpoint spares a second LLM call); once that pass ended without landing, the follow-up is
 * stale and its messages stay raw for the next pass.
 *
 * A take-back (a deletion, an edit, a forget) may land while a pass runs, for as long as it runs. The
 * pass reads the channel's take-back mark before its snapshot and checks for take-backs since then
 * over its range before every model request, after its checkpoint, after its memories and, under the
 * channel lock, at the splice (`SummaryResult.takeBackMark`). Each write is checked after it is made,
 * and the take-back's own runner erases the same copies after its commit, so one of the two always
 * sees the other. When one has landed (`TakenBackError`), the pass drops what it wrote from the old
 * snapshot (its checkpoint, the memories derived from the taken-back seqs) and starts again from the
 * redacted archive (`compaction.restarted`); after `MAX_TAKE_BACK_RESTARTS` it is deferred.
 *
 * The parts, one step a module beside this one (this file runs them, and holds the public surface):
 *
 * - `pass-context.ts`: the job, the channel's settings, the options, one pass and its result.
 * - `pass-snapshot.ts`: the snapshot of the range (`planSnapshot`), or stale before any LLM call.
 * - `pass-summary.ts`: the summary and its memories: checked, checkpointed, upserted.
 * - `pass-take-back-guard.ts`: the take-back checks, and what a restart drops.
 * - `pass-splice.ts`: the splice under the channel lock, its outcome recorded and announced.
 * - `pass-failure.ts`: the failed pass reported, and the run failed after the last try.
 * - `@ebb/core`'s `plan-pass-start.ts`: the pure rules over runs (breaker, follow-up wait, whether a
 *   pass may wait for the LLM, what its run records).
 */
import {
  type CompactionRun,
  circuitOpen,
  DEFAULT_CIRCUIT_BREAKER,
  PassDeferredError,
  RUNS_LOOKBACK,
  type RunStore,
  type SummaryOutput,
  TAKEN_BACK_REASON,
  TakenBackError,
  TERMINAL_RUN_STATUSES,
} from '@ebb/core';
import {
  type ChannelPassSettings,
  type CompactionProcessorOptions,
  type Pass,
  type Prices,
  type Processor,
  type ProcessorJob,
  type ProcessResult,
  passEvent,
} from './pass-context.js';
import { reportFailure } from './pass-failure.js';
import { EMPTY_SNAPSHOT, finishStaleSnapshot, snapshotRange } from './pass-snapshot.js';
import { recordOutcome, spliceSummary } from './pass-splice.js';
import { memoryCheck, storeMemories, summarize } from './pass-summary.js';
import { dropReadBeforeTakeBack, takeBackGuard } from './pass-take-back-guard.js';

export { FOLLOW_UP_MAX_WAIT_MS } from '@ebb/core';
export type {
  ChannelPassSettings,
  CompactionProcessorOptions,
  ProcessorJob,
  ProcessResult,
} from './pass-context.js';

import { inStepSpan } from './pass-spans.js';

export { errorCode, recordFailure } from './pass-failure.js';
export { FOLLOW_UP_RECHECK_MS } from './pass-splice.js';

/** Restarts of one try of a pass because take-backs landed while it ran; then it is deferred. */
export const MAX_TAKE_BACK_RESTARTS = 3;

export function createCompactionProcessor(options: CompactionProcessorOptions) {
  const p: Processor = {
    ...options,
    now: options.now ?? Date.now,
    breaker: options.breaker ?? DEFAULT_CIRCUIT_BREAKER,
    emit: options.onEvent ?? (() => {}),
  };

  return async function processCompaction(job: ProcessorJob, signal?: AbortSignal): Promise<ProcessResult> {
    const pass: Pass = { job, started: p.now(), event: passEvent(job) };
    let prices: Prices = {};
    try {
      const run = await startRun(p.runs, job);
      if (run && TERMINAL_RUN_STATUSES.has(run.status)) {
        return { kind: 'already_finished', status: run.status };
      }
      const recent = await p.runs.recent(job.channelKey, RUNS_LOOKBACK);
      if (circuitOpen(recent, job.jobId, p.breaker, p.now())) return await skipOpenCircuit(p, pass);
      // Resuming from a checkpoint (a retry, or a deferred follow-up): the summary exists, and the
      // splice checks again everything the snapshot would.
      if (run?.output === undefined) p.emit({ event: 'compaction.started', ...pass.event });

      const settings = await p.settingsFor(job.channelKey);
      prices = settings.prices ?? {};
      let checkpoint = run?.output;
      for (let restarts = 0; ; restarts++) {
        try {
          return await passFrom(p, pass, { settings, checkpoint, signal, enqueuedAt: run?.createdAt });
        } catch (err) {
          if (!(err instanceof TakenBackError)) throw err;
          await dropReadBeforeTakeBack(p, job, err.ranges);
          p.emit({ event: 'compaction.restarted', ...pass.event, reason: TAKEN_BACK_REASON });
          if (restarts + 1 >= MAX_TAKE_BACK_RESTARTS)
            throw new PassDeferredError(
              `${job.jobId}: take-backs keep landing over its range`,
              TAKE_BACK_DEFER_MS,
            );
          checkpoint = undefined;
        }
      }
    } catch (err) {
      if (!(err instanceof PassDeferredError)) reportFailure(p, pass, err, prices);
      throw err;
    }
  };
}

/** How long a pass that take-backs kept restarting waits before it tries again. */
const TAKE_BACK_DEFER_MS = 2_000;

interface PassFrom {
  readonly settings: ChannelPassSettings;
  /** The run's checkpoint to resume from, if any (stamped with the mark its snapshot was read at). */
  readonly checkpoint: SummaryOutput | undefined;
  readonly signal: AbortSignal | undefined;
  readonly enqueuedAt: number | undefined;
}

/**
 * One try of a pass from its snapshot (or its checkpoint) to its recorded outcome. Throws
 * `TakenBackError` when a take-back since the snapshot covers its range, at any step.
 */
async function passFrom(p: Processor, pass: Pass, from: PassFrom): Promise<ProcessResult> {
  const { job } = pass;
  const { settings, checkpoint, signal } = from;
  // Read before the snapshot: a take-back committed after it has a higher mark.
  const mark = checkpoint ? (checkpoint.takeBackMark ?? 0) : await p.takeBacks.takeBackMark(job.channelKey);
  const guard = takeBackGuard(p, job, mark);
  if (checkpoint) await guard();
  const snapshot = checkpoint ? EMPTY_SNAPSHOT : await snapshotRange(p.channels, job);
  if (snapshot.kind === 'stale') return await finishStaleSnapshot(p, pass, snapshot);

  const checked = memoryCheck(p, pass, settings.tokenizer);
  const output =
    checkpoint ??
    (await summarize(p, pass, { settings, snapshot, signal, mark, beforeCall: guard }, checked));
  // The stored output may be another worker's (first writer wins): checked at the older of the marks.
  const readAt = Math.min(mark, output.takeBackMark ?? 0);
  const check = readAt === mark ? guard : takeBackGuard(p, job, readAt);
  // Written, then checked: a take-back committed before the check is seen here, and one after it
  // finds what was written (its runner clears checkpoints and drops memories after its commit).
  if (!checkpoint) await check();
  // A checkpoint is JSON typed as proposed memories, and may predate the check: checked on the
  // way out too. For an output this worker just checked it changes nothing.
  const memories = await checked(output.memories);
  const upserted = await inStepSpan(
    'ebb memories',
    () => storeMemories(p, job, settings, memories),
    (u) => ({ 'ebb.memories.added': u.added, 'ebb.memories.refreshed': u.refreshed }),
  );
  if (upserted.added + upserted.refreshed > 0) await check();
  const spliced = await inStepSpan(
    'ebb splice',
    () => spliceSummary(p.channels, job, settings.tokenizer, { ...output, takeBackMark: readAt }),
    (s) => ({ 'ebb.splice.outcome': s.outcome.kind, 'ebb.splice.summary_tokens': s.summaryTokens }),
  );
  if (spliced.outcome.kind === 'stale' && spliced.outcome.reason === TAKEN_BACK_REASON) await check(true);
  return await recordOutcome(p, pass, {
    ...spliced,
    output,
    memoriesAdded: upserted.added,
    enqueuedAt: from.enqueuedAt ?? pass.started,
    prices: settings.prices ?? {},
  });
}

/** Marks the job's run running (creating it first when the worker got the job before the bot recorded it); returns the run as it was. */
async function startRun(
  runs: Pick<RunStore, 'start' | 'create'>,
  job: ProcessorJob,
): Promise<CompactionRun | undefined> {
  const run = await runs.start(job.jobId);
  if (run) return run;
  await runs.create({ ...jobRange(job), jobId: job.jobId, usage: Number.NaN });
  return runs.start(job.jobId);
}

async function skipOpenCircuit(p: Processor, pass: Pass): Promise<ProcessResult> {
  await p.runs.finish(pass.job.jobId, { status: 'skipped', error: 'circuit_open' });
  p.emit({ event: 'compaction.skipped', ...pass.event, reason: 'circuit_open' });
  return { kind: 'skipped', reason: 'circuit_open' };
}

function jobRange(job: ProcessorJob) {
  return {
    channelKey: job.channelKey,
    tier: job.tier,
    fromSeq: job.fromSeq,
    toSeq: job.toSeq,
    generation: job.generation,
    ...(job.focus === undefined ? {} : { focus: job.focus }),
    ...(job.after === undefined ? {} : { after: job.after }),
  };
}
