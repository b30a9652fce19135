/**
 * A channel as a store finds it under its channel lock, in the numbers its writes plan on: the
 * Postgres store reads them from the channel row, the in-memory store from its working context
 * (`countersOf`). Every write that is not an append moves them by one function here or in its
 * planner (`countersAfterSplice`, `countersAfterTruncation`, `planStubs`, `planMessageEdit`,
 * `planArchiveRedaction`, `planSummaryReplacement`), which returns the counters after it, so
 * `WorkingContext` and both stores move the same totals by the same arithmetic.
 */
import { type ContextView, prefixEnd, type Span } from './model.js';

export interface ChannelCounters {
  readonly generation: number;
  readonly headSeq: number;
  /** The last seq the active spans cover: the messages after it are raw in the context. */
  readonly prefixEnd: number;
  /** Tokens of the active spans, and of the raw messages' context copies. */
  readonly spanTokens: number;
  readonly rawTokens: number;
}

/** The counters of a loaded context. */
export function countersOf(
  view: Pick<ContextView, 'generation' | 'headSeq' | 'spans' | 'tokens'>,
): ChannelCounters {
  const spanTokens = view.spans.reduce((n, s) => n + s.tokens, 0);
  return {
    generation: view.generation,
    headSeq: view.headSeq,
    prefixEnd: prefixEnd(view.spans),
    spanTokens,
    rawTokens: view.tokens - spanTokens,
  };
}

/** The context's token total (spans and raw), as the outcomes of the writes report it. */
export function contextTotal(counters: Pick<ChannelCounters, 'spanTokens' | 'rawTokens'>): number {
  return counters.spanTokens + counters.rawTokens;
}

/**
 * After a splice `planSplice` planned: the active spans are the plan's, the raw messages it drops
 * (through `dropRawThrough`) leave with `droppedRawTokens`, and the generation moves on.
 */
export function countersAfterSplice(
  counters: ChannelCounters,
  plan: { readonly spans: readonly Span[] },
  droppedRawTokens: number,
): ChannelCounters {
  return {
    generation: counters.generation + 1,
    headSeq: counters.headSeq,
    prefixEnd: prefixEnd(plan.spans),
    spanTokens: plan.spans.reduce((n, s) => n + s.tokens, 0),
    rawTokens: counters.rawTokens - droppedRawTokens,
  };
}

/**
 * After an emergency truncation `planEmergencyTruncation` planned: its marker joins the spans, in
 * place of the last one when it extends that truncated span (`replacedSpanTokens`, that span's
 * tokens), the raw messages through `toSeq` leave with `droppedTokens`, and the generation moves on.
 */
export function countersAfterTruncation(
  counters: ChannelCounters,
  plan: {
    readonly toSeq: number;
    readonly markerTokens: number;
    readonly droppedTokens: number;
    readonly extendsLast: boolean;
  },
  replacedSpanTokens: number,
): ChannelCounters {
  return {
    generation: counters.generation + 1,
    headSeq: counters.headSeq,
    prefixEnd: plan.toSeq,
    spanTokens: counters.spanTokens + plan.markerTokens - (plan.extendsLast ? replacedSpanTokens : 0),
    rawTokens: counters.rawTokens - plan.droppedTokens,
  };
}
