/**
 * Which part of the context a pass summarizes, sized by what it frees: a pass replaces its range
 * with a summary of up to `summaryTokens`, so to free `fraction` of the context's tokens it covers
 * that much *and* a summary's worth more. The range is cut on a message boundary that keeps tool
 * calls with their results and never reaches into the newest `protectRecent` messages; a range that
 * cannot hold more than a summary would make the context bigger, and is never planned.
 *
 * A pass normally starts at the first seq, so earlier summary spans are folded into the new summary.
 * A follow-up pass (one planned while another pass of the channel is in flight) starts right after
 * that pass's range instead (`after`), so the two ranges are disjoint: each summarizes its own
 * messages, the follow-up splices once the first has landed, and a later pass folds both.
 */
import type { ContextView, Tier } from '../model/model.js';
import { prefixEnd } from '../model/model.js';
import type { Tokenizer } from '../model/tokens.js';
import { safeCut } from '../model/tool-pairs.js';
import { spanTokens } from '../rendering/render-context.js';

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

/**
 * Why no pass: nothing in the context (`empty`), every raw message protected and no truncation to
 * heal (`all_protected`), or what a pass may take holds no more than the summary that would replace
 * it (`nothing_to_free`).
 */
export type NothingReason = 'empty' | 'all_protected' | 'nothing_to_free';

export type CompactionPlanResult =
  | { readonly kind: 'plan'; readonly plan: CompactionPlan }
  | { readonly kind: 'nothing'; readonly reason: NothingReason };

export interface PlanCompactionInput {
  readonly context: ContextView;
  readonly tier: Tier;
  /** Share of the whole context's tokens the pass should free (it covers that plus a summary). */
  readonly fraction: number;
  readonly protectRecent: number;
  /** Tokens of the largest summary span the pass may write (`summarySpanBound`). */
  readonly summaryTokens: number;
  /** Plan a follow-up: the range starts after this seq (the end of the pass in flight). Default 0. */
  readonly after?: number;
}

export function planCompaction(input: PlanCompactionInput): CompactionPlanResult {
  const { context, summaryTokens } = input;
  const { spans, raw } = context;
  const after = input.after ?? 0;
  if (spans.length === 0 && raw.length === 0) return { kind: 'nothing', reason: 'empty' };

  const limit = Math.max(0, raw.length - input.protectRecent);
  // What the range must hold: the summary that replaces it, and what the pass frees (at least a token).
  const target = summaryTokens + Math.max(1, input.fraction * context.tokens);
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
  const toSeq = cut > start ? (raw[cut - 1]?.seq ?? 0) : prefixEnd(spans);
  if (cut <= start && !laterSpans.some((s) => s.kind === 'truncated'))
    return { kind: 'nothing', reason: 'all_protected' };
  const plan = planFor(input, toSeq);
  // Replacing no more than a summary's worth would free nothing, or make the context bigger.
  if (plan.tokensCovered <= summaryTokens) return { kind: 'nothing', reason: 'nothing_to_free' };
  return { kind: 'plan', plan };
}

/**
 * A pass that replaces the truncated spans of the prefix (and any summary before them) with a real
 * summary from the archive. A marker is far smaller than a summary, so the heal also takes the
 * oldest raw messages until it covers more than its summary: it never makes the context bigger.
 * Undefined when there is no truncation, or when the messages it may take are not enough yet (the
 * channel's next messages will be).
 */
export function planHeal(
  context: ContextView,
  options: Pick<PlanCompactionInput, 'protectRecent' | 'summaryTokens'>,
): CompactionPlan | undefined {
  if (!context.spans.some((s) => s.kind === 'truncated')) return undefined;
  const result = planCompaction({ context, tier: 'emergency', fraction: 0, ...options });
  return result.kind === 'plan' ? result.plan : undefined;
}

/**
 * Tokens of the largest summary span a pass writes with a budget of `summaryMaxTokens`: the text and
 * the block around it (`renderSummary`). What a pass must cover more than to free anything.
 */
export function summarySpanBound(tokenizer: Tokenizer, summaryMaxTokens: number): number {
  const seq = 999_999_999;
  return summaryMaxTokens + spanTokens(tokenizer, { kind: 'summary', fromSeq: seq, toSeq: seq, text: '' });
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
