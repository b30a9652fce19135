/**
 * The two writes that move a working context's prefix, as the plans of `plans/` make them and every
 * holder of a context applies them (`WorkingContext`, the stores through `channel-counters.ts`): a
 * splice (`planSplice`) puts a summary in place of what it covers, a truncation
 * (`planEmergencyTruncation`) sets the oldest raw messages aside behind a marker. Values only: the
 * rules that make them live with their planners.
 */
import type { Span } from './model.js';

export type SplicePlan =
  | {
      readonly kind: 'splice';
      /** The generation the plan was made at; applying it bumps it by one. */
      readonly generation: number;
      readonly spans: readonly Span[];
      /** Raw messages with seq ≤ this leave the context. */
      readonly dropRawThrough: number;
    }
  | { readonly kind: 'stale'; readonly reason: string }
  /** The range starts after the prefix's end + 1: the pass before it has not spliced yet. */
  | { readonly kind: 'gap'; readonly reason: string }
  | { readonly kind: 'noop'; readonly reason: 'already_applied' };

export interface TruncationPlan {
  readonly kind: 'truncate';
  /** The generation the plan was made at; applying it bumps it by one. */
  readonly generation: number;
  /** The range the new truncated span covers (merged with a truncated span it extends). */
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Whether the last span is a truncated span that this one extends. */
  readonly extendsLast: boolean;
  /** Raw messages that leave the context, and their tokens. */
  readonly droppedMessages: number;
  readonly droppedTokens: number;
  /** Tokens of the marker (same for every truncated span). */
  readonly markerTokens: number;
}
