/**
 * Forgetting's summary written again (`Forgetting.replaceSummary`), as a pure plan both channel
 * stores carry out: the new span takes the place of the active summary over exactly its range, if
 * that span is still the one job `replaces` wrote. Otherwise a pass replaced it meanwhile (or a
 * truncation, or nothing was there): `missing`, nothing changes, and forgetting plans again.
 * `planSplice` cannot do this: to it an equal range is a retried job, a no-op.
 */

import { type ChannelCounters, contextTotal } from '../model/channel-counters.js';
import type { Span, SummarySpan } from '../model/model.js';

/** The summary written again, that `Forgetting.replaceSummary` puts in place. */
export interface SummaryReplacement {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
  readonly tokens: number;
  /** The job id the new span records (it names the forgetting). */
  readonly jobId: string;
  /** The job id of the span it replaces, as read before summarizing. */
  readonly replaces: string;
}

export type SummaryReplacementPlan =
  | {
      readonly kind: 'replace';
      /** The active span that goes (one of `spans`, the same object), retired. */
      readonly replaced: SummarySpan;
      /** The span in its place, created at the generation after. */
      readonly span: SummarySpan;
      readonly generation: number;
      readonly spanTokens: number;
      /** The context's tokens (spans and raw) before and after. */
      readonly tokensBefore: number;
      readonly tokensAfter: number;
    }
  | { readonly kind: 'missing' };

/** Planned on the channel (undefined: no such channel) and its active spans, as found under the lock. */
export function planSummaryReplacement(
  channel: ChannelCounters | undefined,
  spans: readonly Span[],
  replacement: SummaryReplacement,
): SummaryReplacementPlan {
  const replaced = spans.find(
    (s): s is SummarySpan =>
      s.kind === 'summary' &&
      s.fromSeq === replacement.fromSeq &&
      s.toSeq === replacement.toSeq &&
      s.jobId === replacement.replaces,
  );
  if (channel === undefined || replaced === undefined) return { kind: 'missing' };
  const generation = channel.generation + 1;
  const { replaces: _replaces, ...fields } = replacement;
  const spanTokens = channel.spanTokens - replaced.tokens + replacement.tokens;
  return {
    kind: 'replace',
    replaced,
    span: { kind: 'summary', ...fields, createdGeneration: generation },
    generation,
    spanTokens,
    tokensBefore: contextTotal(channel),
    tokensAfter: contextTotal({ ...channel, spanTokens }),
  };
}
