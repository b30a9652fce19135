/**
 * Who gets a slot in a channel's compaction queue: one rule for both queue drivers and for
 * `ebb simulate`. A channel holds at most `MAX_PASSES_IN_FLIGHT` passes, over disjoint ranges.
 *
 * - A pass overlapping one that runs, or one that waits with the same or a higher tier, is
 *   `deduplicated`: that pass covers it.
 * - A pass overlapping exactly one waiting pass of a lower tier replaces it (`replace`): a higher
 *   tier is never held back by a lower one.
 * - A pass over a disjoint range is added while the channel has a free slot.
 */

import type { Tier } from '../model/model.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import { MAX_PASSES_IN_FLIGHT, tierRank } from './decide-after-turn.js';

export type Admission =
  | { readonly kind: 'add' }
  | { readonly kind: 'replace'; readonly jobId: string }
  | { readonly kind: 'deduplicated'; readonly jobId: string };

export function admitPass(
  inFlight: readonly PassInFlight[],
  job: { readonly tier: Tier; readonly fromSeq: number; readonly toSeq: number },
): Admission {
  const overlapping = inFlight.filter((p) => p.fromSeq <= job.toSeq && p.toSeq >= job.fromSeq);
  const [first] = overlapping;
  if (first !== undefined) {
    const holder = overlapping.find((p) => p.running || tierRank(job.tier) <= tierRank(p.tier));
    if (holder !== undefined) return { kind: 'deduplicated', jobId: holder.jobId };
    // Two waiting passes under one new range: keep them rather than drop two for one.
    if (overlapping.length > 1) return { kind: 'deduplicated', jobId: first.jobId };
    return { kind: 'replace', jobId: first.jobId };
  }
  const last = inFlight.at(-1);
  if (last !== undefined && inFlight.length >= MAX_PASSES_IN_FLIGHT)
    return { kind: 'deduplicated', jobId: last.jobId };
  return { kind: 'add' };
}
