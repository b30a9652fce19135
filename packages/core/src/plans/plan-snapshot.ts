/**
 * What a pass summarizes, decided when it starts: the summary spans that lie inside its range now
 * (folded into the new summary), and the archive for every other seq of the range (raw messages and
 * truncated spans alike). A summary reaching outside the range means a wider pass landed first: the
 * pass is stale before any LLM call. A summary a take-back set aside (`PENDING_SUMMARY`) is read from
 * the archive instead: folding its placeholder in would lose its range. The worker reads the archive parts from its store; `ebb simulate`
 * from memory.
 */
import type { PrefixView } from '../model/model.js';
import { PENDING_SUMMARY } from './plan-message-change.js';

export type SnapshotPart =
  | { readonly kind: 'summary'; readonly text: string; readonly tokens: number }
  | { readonly kind: 'archive'; readonly fromSeq: number; readonly toSeq: number };

export type SnapshotPlan =
  | { readonly kind: 'ok'; readonly parts: readonly SnapshotPart[] }
  | { readonly kind: 'stale'; readonly reason: string };

export function planSnapshot(
  prefix: PrefixView,
  range: { readonly fromSeq: number; readonly toSeq: number },
): SnapshotPlan {
  if (range.toSeq > prefix.headSeq)
    return { kind: 'stale', reason: `range ends past head ${prefix.headSeq}` };
  const parts: SnapshotPart[] = [];
  let next = range.fromSeq;
  for (const span of prefix.spans) {
    if (span.toSeq < range.fromSeq || span.fromSeq > range.toSeq || span.kind !== 'summary') continue;
    if (span.fromSeq < range.fromSeq || span.toSeq > range.toSeq) {
      return {
        kind: 'stale',
        reason: `summary ${span.fromSeq}..${span.toSeq} reaches outside ${range.fromSeq}..${range.toSeq}`,
      };
    }
    // A summary set aside by a take-back holds a placeholder, not its range: read from the archive,
    // as it stands redacted.
    if (span.text === PENDING_SUMMARY) continue;
    if (span.fromSeq > next) parts.push({ kind: 'archive', fromSeq: next, toSeq: span.fromSeq - 1 });
    parts.push({ kind: 'summary', text: span.text, tokens: span.tokens });
    next = span.toSeq + 1;
  }
  if (next <= range.toSeq) parts.push({ kind: 'archive', fromSeq: next, toSeq: range.toSeq });
  return { kind: 'ok', parts };
}
