/**
 * Forgetting, as pure decisions: which summary spans still hold what was said in some seqs, and the
 * archive as a summarizer may read it once those seqs are redacted. A redacted message keeps its
 * seq, role and author (the conversation keeps its shape and who spoke when); its text becomes
 * `REDACTED_MESSAGE` and the arguments of its tool calls `{}`, so no fact of it reaches a summary.
 *
 * A summary span over 1..k folds the summaries before it, so a span is rebuilt from the archive
 * over its whole range, never from its own text.
 */

import type { PrefixView, SeqRange, Span, StoredMessage, SummarySpan } from '../model/model.js';
import { messageTokens, type Tokenizer } from '../model/tokens.js';
import { HISTORY_TOOL_NAMES } from '../tools/archive-search.js';

/** The text a redacted message keeps, in the archive (`--archive`) and in what a summarizer is shown. */
export const REDACTED_MESSAGE = '[message redacted]';
/** The text a retired summary span keeps once it overlapped redacted seqs. */
export const REDACTED_SUMMARY = '[summary redacted]';

/** Seqs as the fewest ranges, in order (duplicates and order of the input do not matter). */
export function seqRanges(seqs: Iterable<number>): SeqRange[] {
  const sorted = [...new Set(seqs)].sort((a, b) => a - b);
  const ranges: { fromSeq: number; toSeq: number }[] = [];
  for (const seq of sorted) {
    const last = ranges.at(-1);
    if (last && last.toSeq + 1 === seq) last.toSeq = seq;
    else ranges.push({ fromSeq: seq, toSeq: seq });
  }
  return ranges;
}

/**
 * Each seq and the `lookahead` seqs after it, as the fewest ranges (windows that overlap or touch
 * merge): what reading "every message up to `lookahead` after each of these" reads, once per seq.
 */
export function rangesAfter(seqs: Iterable<number>, lookahead: number): SeqRange[] {
  const merged: { fromSeq: number; toSeq: number }[] = [];
  for (const r of seqRanges(seqs)) {
    const last = merged.at(-1);
    if (last && r.fromSeq <= last.toSeq + 1) last.toSeq = r.toSeq + lookahead;
    else merged.push({ fromSeq: r.fromSeq, toSeq: r.toSeq + lookahead });
  }
  return merged;
}

/** Every seq of the ranges. */
export function seqsOf(ranges: readonly SeqRange[]): number[] {
  const seqs = new Set<number>();
  for (const r of ranges) for (let seq = r.fromSeq; seq <= r.toSeq; seq++) seqs.add(seq);
  return [...seqs].sort((a, b) => a - b);
}

export function overlapsAny(span: SeqRange, ranges: readonly SeqRange[]): boolean {
  return ranges.some((r) => r.fromSeq <= span.toSeq && span.fromSeq <= r.toSeq);
}

/**
 * The active summary spans that hold something of the redacted seqs: each must be summarized again
 * from the archive with those seqs redacted. Truncation markers hold no text and stay.
 */
export function spansToResummarize(
  prefix: Pick<PrefixView, 'spans'>,
  redacted: readonly SeqRange[],
): SummarySpan[] {
  return prefix.spans.filter((s: Span): s is SummarySpan => s.kind === 'summary' && overlapsAny(s, redacted));
}

/** The messages with the redacted seqs tombstoned and their tokens counted again. */
export function redactMessages(
  messages: readonly StoredMessage[],
  redacted: readonly SeqRange[],
  tokenizer: Tokenizer,
): StoredMessage[] {
  return messages.map((m) =>
    overlapsAny({ fromSeq: m.seq, toSeq: m.seq }, redacted) ? tombstone(m, tokenizer) : m,
  );
}

/**
 * A message as redaction leaves it: same seq, role, author and tool call ids; no text, no arguments,
 * and no microcompaction stub (which quotes the result's first line).
 */
export function tombstone(message: StoredMessage, tokenizer: Tokenizer): StoredMessage {
  const { toolCalls, stub: _stub, ...rest } = message;
  const redacted = {
    ...rest,
    text: REDACTED_MESSAGE,
    ...(toolCalls === undefined ? {} : { toolCalls: toolCalls.map((c) => ({ ...c, arguments: '{}' })) }),
  };
  return { ...redacted, tokens: messageTokens(tokenizer, redacted) };
}

/** A message block of a `search_history` / `read_history` result starts `#<seq> <author> (`. */
const QUOTED_HEADER = /^#(\d+) /gm;

/**
 * The results of the history tools (`search_history`, `read_history`) among `results` that quote a
 * redacted seq: copies of redacted messages, archived as tool results, which forgetting must redact
 * too (the speaker of a copy is the tool, so `--speaker` alone would miss them).
 */
export function historyResultsQuoting(
  results: readonly StoredMessage[],
  redacted: readonly SeqRange[],
): number[] {
  return results
    .filter((m) => m.role === 'tool' && (HISTORY_TOOL_NAMES as readonly string[]).includes(m.author))
    .filter((m) =>
      [...m.text.matchAll(QUOTED_HEADER)].some((match) => {
        const seq = Number(match[1]);
        return overlapsAny({ fromSeq: seq, toSeq: seq }, redacted);
      }),
    )
    .map((m) => m.seq);
}
