/**
 * Which part of the context a pass summarizes: the oldest `fraction` of it by tokens, starting at
 * the first seq so earlier summary spans are folded into the new summary, cut on a message boundary
 * that keeps tool calls with their results, and never reaching into the newest `protectRecent`
 * messages.
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
  readonly fraction: number;
  readonly protectRecent: number;
}

export function planCompaction(input: PlanCompactionInput): CompactionPlanResult {
  const { context } = input;
  const { spans, raw } = context;
  if (spans.length === 0 && raw.length === 0) return { kind: 'nothing', reason: 'empty' };

  const limit = Math.max(0, raw.length - input.protectRecent);
  const target = input.fraction * context.tokens;
  let covered = spans.reduce((sum, s) => sum + s.tokens, 0);
  // Take whole messages until the target is met, and always at least one, so the pass makes progress.
  let end = 0;
  while (end < limit && (end === 0 || covered < target)) {
    covered += raw[end]?.tokens ?? 0;
    end++;
  }
  const cut = safeCut(raw, end, limit);
  if (cut === 0) {
    // Nothing raw can go; a truncated span can still be healed on its own.
    if (!spans.some((s) => s.kind === 'truncated')) return { kind: 'nothing', reason: 'all_protected' };
    return { kind: 'plan', plan: planFor(input, prefixEnd(spans), 0) };
  }
  return { kind: 'plan', plan: planFor(input, raw[cut - 1]?.seq ?? 0, cut) };
}

/** A pass that replaces the truncated spans of the prefix (and any summary before them) with a real summary. */
export function planHeal(context: ContextView): CompactionPlan | undefined {
  if (!context.spans.some((s) => s.kind === 'truncated')) return undefined;
  return planFor({ context, tier: 'emergency' }, prefixEnd(context.spans), 0);
}

function planFor(
  input: Pick<PlanCompactionInput, 'context' | 'tier'>,
  toSeq: number,
  rawMessages: number,
): CompactionPlan {
  const { spans, raw } = input.context;
  let tokensCovered = 0;
  for (const s of spans) tokensCovered += s.tokens;
  for (let i = 0; i < rawMessages; i++) tokensCovered += raw[i]?.tokens ?? 0;
  return {
    tier: input.tier,
    fromSeq: spans[0]?.fromSeq ?? raw[0]?.seq ?? 1,
    toSeq,
    generation: input.context.generation,
    tokensCovered,
    rawMessages,
  };
}
