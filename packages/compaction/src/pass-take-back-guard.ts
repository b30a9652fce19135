/**
 * A pass against the take-backs that land while it runs (`compaction-processor.ts` calls the guard
 * before every model request, after its checkpoint, after its memories and after a splice refused as
 * taken back, and restarts the pass when it throws): the guard throws `TakenBackError` when a
 * take-back since the pass's mark covers its range, and `dropReadBeforeTakeBack` drops what the pass
 * wrote from the old snapshot (the same copies the take-back's own runner drops, `take-back-copies.ts`).
 */
import { type SeqRange, seqRanges, seqsOf, TakenBackError } from '@ebb/core';
import type { Processor, ProcessorJob } from './pass-context.js';
import { dropDerivedMemories } from './take-back-copies.js';

/**
 * Throws `TakenBackError` when a take-back since `mark` covers a seq of the job's range (`always`:
 * the splice said so under the lock; the ranges are read again for the error).
 */
export function takeBackGuard(p: Processor, job: ProcessorJob, mark: number) {
  const range = { fromSeq: job.fromSeq, toSeq: job.toSeq };
  return async (always = false): Promise<void> => {
    const since = await p.takeBacks.takenBackSince(job.channelKey, mark, range);
    if (since.length === 0 && !always) return;
    const inRange = seqsOf(since.flatMap((t) => t.ranges)).filter(
      (s) => s >= range.fromSeq && s <= range.toSeq,
    );
    throw new TakenBackError(
      `${since.length} take-back(s) since mark ${mark} cover ${job.fromSeq}..${job.toSeq}`,
      inRange.length > 0 ? seqRanges(inRange) : [range],
    );
  };
}

/**
 * What a pass wrote from a snapshot a take-back has since covered: its checkpoint (and any other over
 * the range: read before it too, or not, a retry summarizes again) and the memories derived from the
 * taken-back seqs.
 */
export async function dropReadBeforeTakeBack(
  p: Processor,
  job: ProcessorJob,
  ranges: readonly SeqRange[],
): Promise<void> {
  await p.runs.clearCheckpoints(job.channelKey, [{ fromSeq: job.fromSeq, toSeq: job.toSeq }]);
  await dropDerivedMemories(p, job.channelKey, ranges);
}
