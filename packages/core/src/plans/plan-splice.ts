/**
 * Where a finished summary goes. A pass summarizes seqs fromSeq..toSeq from a snapshot; by the time
 * it finishes, emergency truncations or other passes may have changed the prefix. The rules:
 *
 * 1. A span produced by this same job is already there: nothing to do (a retried job is a no-op).
 *    Likewise when a summary of exactly this range is there: it stands for the same messages, and
 *    replacing it would let a retried job undo the pass that replaced it.
 * 2. A summary span that overlaps fromSeq..toSeq but reaches outside it knows things this summary
 *    does not: the result is stale and is dropped (those messages stay covered by that span).
 * 3. A range that starts past the first raw message would leave a gap in the prefix: it is a
 *    follow-up pass whose predecessor has not landed yet (`gap`). The caller waits for that pass, or
 *    drops the result if the predecessor will never land.
 * 4. A summary larger than what it would replace now is stale too: a completed pass never makes the
 *    context bigger. Passes are planned to cover more than their summary, so this happens only when
 *    an emergency truncation set most of the range aside while the pass ran (the truncation marker
 *    stays, and a heal sized to free tokens replaces it later), or a summarizer overran its budget.
 * 5. Otherwise the new summary replaces every span inside its range: older summaries it folded, a
 *    newer summary of a sub-range (whose sources it saw all of, from the archive or the summaries
 *    it folded), and truncation markers it heals. A truncated span that sticks out past toSeq is
 *    trimmed to the part not covered, and the raw messages up to toSeq leave the context. The
 *    archive is never touched.
 */
import type { SplicePlan } from '../model/context-writes.js';
import { type ContextView, prefixEnd, type Span, type SummarySpan } from '../model/model.js';

export interface SummaryResult {
  readonly jobId: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
  /** Tokens of the rendered summary span (see `spanTokens`). */
  readonly tokens: number;
  /**
   * The channel's take-back mark when the pass read what it summarized: a take-back since then over
   * the range makes the splice `stale` with reason `taken_back` (the store checks, under the lock).
   * Absent: not checked (a caller that read nothing a take-back could cover).
   */
  readonly takeBackMark?: number;
}

/** The splice's refusal when a take-back came after the pass's snapshot (see `SummaryResult.takeBackMark`). */
export const TAKEN_BACK_REASON = 'taken_back';

/**
 * Reads only the generation, head and spans of the context, and `droppedRawTokens`: the tokens of
 * the raw messages after the prefix up to `result.toSeq` (what the splice drops; `rawTokensThrough`
 * for a loaded context), so a store can plan without loading raw messages.
 */
export function planSplice(
  context: Pick<ContextView, 'generation' | 'headSeq' | 'spans'>,
  result: SummaryResult,
  droppedRawTokens: number,
): SplicePlan {
  const { spans } = context;
  const a = result.fromSeq;
  const b = result.toSeq;
  if (b < a || b > context.headSeq) {
    return { kind: 'stale', reason: `range ${a}..${b} is outside the archive 1..${context.headSeq}` };
  }
  if (
    spans.some(
      (s) => s.kind === 'summary' && (s.jobId === result.jobId || (s.fromSeq === a && s.toSeq === b)),
    )
  ) {
    return { kind: 'noop', reason: 'already_applied' };
  }
  const wider = spans.find((s) => s.kind === 'summary' && overlaps(s, a, b) && !within(s, a, b));
  if (wider) {
    return { kind: 'stale', reason: `summary ${wider.fromSeq}..${wider.toSeq} reaches outside ${a}..${b}` };
  }
  if (a > prefixEnd(spans) + 1) {
    return { kind: 'gap', reason: `range starts at ${a}, after the prefix ending at ${prefixEnd(spans)}` };
  }

  const generation = context.generation + 1;
  const summary: SummarySpan = {
    kind: 'summary',
    fromSeq: a,
    toSeq: b,
    text: result.text,
    tokens: result.tokens,
    createdGeneration: generation,
    jobId: result.jobId,
  };
  const next: Span[] = [];
  for (const s of spans) {
    if (s.toSeq < a) {
      next.push(s);
    } else if (s.fromSeq < a) {
      // A truncation marker straddling the start keeps the part before it (summaries were ruled out).
      next.push({ ...s, toSeq: a - 1 });
    }
  }
  next.push(summary);
  for (const s of spans) {
    if (s.toSeq <= b) continue;
    next.push(s.fromSeq > b ? s : { ...s, fromSeq: b + 1 });
  }
  const replaced = sumTokens(spans) - sumTokens(next) + summary.tokens + droppedRawTokens;
  if (summary.tokens > replaced) {
    return {
      kind: 'stale',
      reason: `the summary (${summary.tokens} tokens) is larger than the ${replaced} tokens it would replace`,
    };
  }
  return { kind: 'splice', generation: context.generation, spans: next, dropRawThrough: b };
}

/** Tokens of the raw messages of a loaded context up to `toSeq`: what a splice through it drops. */
export function rawTokensThrough(raw: ContextView['raw'], toSeq: number): number {
  let tokens = 0;
  for (const m of raw) {
    if (m.seq > toSeq) break;
    tokens += m.tokens;
  }
  return tokens;
}

function sumTokens(spans: readonly Span[]): number {
  return spans.reduce((n, s) => n + s.tokens, 0);
}

function overlaps(s: Span, a: number, b: number): boolean {
  return s.fromSeq <= b && s.toSeq >= a;
}

function within(s: Span, a: number, b: number): boolean {
  return s.fromSeq >= a && s.toSeq <= b;
}
