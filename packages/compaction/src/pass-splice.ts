/**
 * A pass's last steps (of `compaction-processor.ts`): the summary spliced over the job's range under
 * the channel lock, then the splice's outcome recorded on the run (the figures `passRunFigures`
 * gives), announced to the bots (context-changed) and reported. A follow-up whose splice met a gap
 * while the pass ahead is still on its way is deferred (`waitsForPredecessor`).
 */
import {
  type ContextWriter,
  callsCost,
  PassDeferredError,
  passRunFigures,
  type SpliceOutcome,
  type SummaryOutput,
  spanTokens,
  type Tokenizer,
  waitsForPredecessor,
} from '@ebb/core';
import type { Pass, Prices, Processor, ProcessorJob, ProcessResult } from './pass-context.js';
import { errorCode } from './pass-failure.js';

/** How soon a deferred follow-up looks again whether the pass ahead of it landed. */
export const FOLLOW_UP_RECHECK_MS = 500;

/** The summary spliced over the job's range under the channel lock (or refused: stale, gap, applied already). */
export async function spliceSummary(
  channels: Pick<ContextWriter, 'splice'>,
  job: ProcessorJob,
  tokenizer: Tokenizer,
  output: Pick<SummaryOutput, 'text'> & { readonly takeBackMark: number },
): Promise<{ outcome: SpliceOutcome; summaryTokens: number }> {
  const range = { fromSeq: job.fromSeq, toSeq: job.toSeq };
  const summaryTokens = spanTokens(tokenizer, { kind: 'summary', ...range, text: output.text });
  const outcome = await channels.splice(job.channelKey, {
    jobId: job.jobId,
    ...range,
    text: output.text,
    tokens: summaryTokens,
    takeBackMark: output.takeBackMark,
  });
  return { outcome, summaryTokens };
}

export interface Spliced {
  readonly outcome: SpliceOutcome;
  readonly output: SummaryOutput;
  readonly summaryTokens: number;
  readonly memoriesAdded: number;
  /** When the run was created: how long a follow-up has waited for the pass ahead of it. */
  readonly enqueuedAt: number;
  readonly prices: Prices;
}

/**
 * The splice's outcome recorded on the run and reported: a follow-up that met a gap while the pass
 * ahead is still on its way is deferred; stale (or a gap with nothing left to wait for) ends the
 * run stale; a splice, or one an earlier try applied, completes it.
 */
export async function recordOutcome(p: Processor, pass: Pass, spliced: Spliced): Promise<ProcessResult> {
  const { job } = pass;
  const { outcome, output, summaryTokens, memoriesAdded } = spliced;
  const calls = passRunFigures(output, { summaryTokens, memoriesAdded, durationMs: p.now() - pass.started });
  if (outcome.kind === 'gap') {
    const ahead = job.after === undefined ? undefined : await p.runs.get(job.after);
    if (waitsForPredecessor(job, ahead, spliced.enqueuedAt, p.now())) {
      throw new PassDeferredError(`${job.jobId} waits for ${job.after} to splice`, FOLLOW_UP_RECHECK_MS);
    }
  }
  if (outcome.kind === 'stale' || outcome.kind === 'gap') {
    await p.runs.finish(job.jobId, { status: 'stale', error: outcome.reason, ...calls });
    p.emit({
      event: 'compaction.stale',
      ...pass.event,
      reason: outcome.reason,
      durationMs: calls.durationMs,
    });
    return { kind: 'stale', reason: outcome.reason };
  }
  // Set once the pass is recorded completed: nothing after that may fail it.
  let notifyError: string | undefined;
  if (outcome.kind === 'splice') {
    await p.runs.finish(job.jobId, {
      status: 'completed',
      tokensBefore: outcome.tokensBefore,
      tokensAfter: outcome.tokensAfter,
      ...calls,
    });
    // The pass is in Postgres: Redis away cannot undo it. Bots that miss the notice see the new
    // generation on their next append and reload then.
    notifyError = await p.notifier
      .publish({ channelKey: job.channelKey, generation: outcome.generation })
      .then(
        () => undefined,
        (err: unknown) => errorCode(err),
      );
  } else {
    // Applied by an earlier try that died before recording it.
    await p.runs.finish(job.jobId, { status: 'completed', ...calls });
  }
  p.emit({
    event: 'compaction.completed',
    ...pass.event,
    ...(outcome.kind === 'splice'
      ? {
          tokensBefore: outcome.tokensBefore,
          tokensAfter: outcome.tokensAfter,
          messagesCompacted: outcome.messagesRemoved,
        }
      : { reason: outcome.reason }),
    summaryTokens,
    memoriesAdded,
    durationMs: calls.durationMs,
    fallback: output.fallback,
    model: output.model,
    ...callsCost(output.calls, spliced.prices),
    // The context-changed notice could not be sent (e.g. redis_unavailable).
    ...(notifyError === undefined ? {} : { error: notifyError }),
  });
  return { kind: 'completed', outcome, memoriesAdded, fallback: output.fallback };
}
