/**
 * Which part of the context a pass summarizes: the oldest `fraction` of it by tokens, cut on a
 * message boundary that keeps tool calls with their results, and never reaching into the newest
 * `protectRecent` messages.
 *
 * A pass normally starts at the first seq, so earlier summary spans are folded into the new summary.
 * A follow-up pass (one planned while another pass of the channel is in flight) starts right after
 * that pass's range instead (`after`), so the two ranges are disjoint: each summarizes its own
 * messages, the follow-up splices once the first has landed, and a later pass folds both.
 */
import type { ContextView, Tier } from './model.js';
import { prefixEnd } from './model.js';
import { safeCut } from './tool-pairs.js';

export interface CompactionPlan {
  readonly tier: Tier;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The channel generation the plan was made at. */
  readonly generation: number;
  /** Context tokens the range occupies now (spans and raw messages in it). */
  readonly tokensCovered: number;
  /** Raw messages in the range. */
  readonly rawMessages: number;
}

export type CompactionPlanResult =
  | { readonly kind: 'plan'; readonly plan: CompactionPlan }
  | { readonly kind: 'nothing'; readonly reason: 'empty' | 'all_protected' };

export interface PlanCompactionInput {
  readonly context: ContextView;
  readonly tier: Tier;
  /** Share of the whole context's tokens the range should hold. */
  readonly fraction: number;
  readonly protectRecent: number;
  /** Plan a follow-up: the range starts after this seq (the end of the pass in flight). Default 0. */
  readonly after?: number;
}

export function planCompaction(input: PlanCompactionInput): CompactionPlanResult {
  const { context } = input;
  const { spans, raw } = context;
  const after = input.after ?? 0;
  if (spans.length === 0 && raw.length === 0) return { kind: 'nothing', reason: 'empty' };

  const limit = Math.max(0, raw.length - input.protectRecent);
  const target = input.fraction * context.tokens;
  const laterSpans = spans.filter((s) => s.toSeq > after);
  let covered = laterSpans.reduce((sum, s) => sum + s.tokens, 0);
  const start = firstRawAfter(raw, after);
  // Take whole messages until the target is met, and always at least one, so the pass makes progress.
  let end = start;
  while (end < limit && (end === start || covered < target)) {
    covered += raw[end]?.tokens ?? 0;
    end++;
  }
  const cut = end > start ? safeCut(raw, end, limit) : start;
  if (cut <= start) {
    // Nothing raw can go; a truncated span can still be healed on its own.
    if (!laterSpans.some((s) => s.kind === 'truncated')) return { kind: 'nothing', reason: 'all_protected' };
    return { kind: 'plan', plan: planFor(input, prefixEnd(spans)) };
  }
  return { kind: 'plan', plan: planFor(input, raw[cut - 1]?.seq ?? 0) };
}

/** A pass that replaces the truncated spans of the prefix (and any summary before them) with a real summary. */
export function planHeal(context: ContextView): CompactionPlan | undefined {
  if (!context.spans.some((s) => s.kind === 'truncated')) return undefined;
  return planFor({ context, tier: 'emergency' }, prefixEnd(context.spans));
}

/** Tokens the context holds for seqs fromSeq..toSeq (spans overlapping the range count whole). */
export function tokensInRange(context: ContextView, fromSeq: number, toSeq: number): number {
  let tokens = 0;
  for (const s of context.spans) if (s.toSeq >= fromSeq && s.fromSeq <= toSeq) tokens += s.tokens;
  for (let i = firstRawAfter(context.raw, fromSeq - 1); i < context.raw.length; i++) {
    const m = context.raw[i];
    if (m === undefined || m.seq > toSeq) break;
    tokens += m.tokens;
  }
  return tokens;
}

function planFor(
  input: Pick<PlanCompactionInput, 'context' | 'tier' | 'after'>,
  toSeq: number,
): CompactionPlan {
  const { context } = input;
  const after = input.after ?? 0;
  const { spans, raw } = context;
  const fromSeq = after > 0 ? after + 1 : (spans[0]?.fromSeq ?? raw[0]?.seq ?? 1);
  let rawMessages = 0;
  for (let i = firstRawAfter(raw, fromSeq - 1); i < raw.length && (raw[i]?.seq ?? 0) <= toSeq; i++)
    rawMessages++;
  return {
    tier: input.tier,
    fromSeq,
    toSeq,
    generation: context.generation,
    tokensCovered: tokensInRange(context, fromSeq, toSeq),
    rawMessages,
  };
}

/** Index of the first raw message with seq > `seq` (raw messages are contiguous and ordered). */
function firstRawAfter(raw: ContextView['raw'], seq: number): number {
  const first = raw[0]?.seq;
  if (first === undefined) return 0;
  return Math.min(raw.length, Math.max(0, seq + 1 - first));
}
