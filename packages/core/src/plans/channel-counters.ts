/**
 * A channel as a store finds it under its channel lock, in the numbers its writes plan on: the
 * Postgres store reads them from the channel row, the in-memory store from its working context
 * (`countersOf`). The write planners (`planStubs`, `planMessageEdit`, `planArchiveRedaction`,
 * `planSummaryReplacement`) take them and return the counters after the write, so both stores move
 * the same totals by the same arithmetic.
 */
import { type ContextView, prefixEnd } from '../model/model.js';

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
