/**
 * What a message its author took back (deleted, or edited under `on_edit = "resummarize"`) reaches,
 * as pure decisions; the bot's redaction path carries them out (`apps/bot/src/bot/message-changes.ts`).
 *
 * A deletion redacts the message and the bot's own turn that answered it: the messages right after
 * it that are not a person's (the reply, and the tool calls and results of that turn), up to the next
 * person's message. Within a channel's actor a turn's messages are appended before the next message
 * is taken, so that run is the reply generated from it, never another person's turn. Each redacted
 * seq is either raw in the context (its copy goes with the archive's) or inside the compacted prefix,
 * where the summaries holding it are set aside at once (`PENDING_SUMMARY`) and written again by a
 * queued pass (never on the turn path).
 *
 * A memory is dropped when its source range holds a removed message (`memoriesOver`).
 */
import type { Memory } from '../memory/memory.js';
import type { PrefixView, SeqRange, Span, StoredMessage } from '../model/model.js';
import { overlapsAny, seqRanges, spansToResummarize } from './plan-redaction.js';

/**
 * The text a summary holding a taken-back message keeps until its queued pass writes it again: no
 * prompt in between shows what was taken back (the archive, `search_history`, keeps the rest).
 */
export const PENDING_SUMMARY = '[summary being written again: a message in it was taken back]';

export interface DeletionInput {
  /** The prefix as loaded (spans, head). */
  readonly prefix: PrefixView;
  /** The seqs the platform deleted (found by their platform ids). */
  readonly deleted: readonly number[];
  /**
   * Archived messages from the first deleted seq on, in seq order, far enough past each deleted one
   * to reach the next person's message (a turn's tool steps included).
   */
  readonly archive: readonly Pick<StoredMessage, 'seq' | 'role'>[];
}

export interface DeletionPlan {
  /** Every seq to tombstone: the deleted messages and the bot's replies to them. */
  readonly redact: readonly SeqRange[];
  /** The seqs of the bot's turns that answered a deleted message (in `redact` too). */
  readonly replies: readonly number[];
  /** Redacted seqs still raw in the context (their copies change with the archive). */
  readonly raw: readonly number[];
  /** Redacted seqs inside the compacted prefix (a summary or a truncation marker holds them). */
  readonly compacted: readonly number[];
  /** Active summary spans holding a redacted seq: written again from the redacted archive, queued. */
  readonly resummarize: readonly SeqRange[];
}

/** The seqs of the bot's turn right after a person's message: up to the next person's message. */
export function replyTurnSeqs(after: readonly Pick<StoredMessage, 'seq' | 'role'>[]): number[] {
  const end = after.findIndex((m) => m.role === 'user');
  return (end < 0 ? after : after.slice(0, end)).map((m) => m.seq);
}

/**
 * The seqs of the bot's turns that answered the person's messages `seqs` (each message's own turn),
 * in order; `archive` holds each of them and the turn after it, in seq order. A seq that is the bot's
 * own (a reply the web API names) has no turn of its own.
 */
export function repliesTo(
  archive: readonly Pick<StoredMessage, 'seq' | 'role'>[],
  seqs: readonly number[],
): number[] {
  const bySeq = new Map(archive.map((m, i) => [m.seq, i]));
  const replies = new Set<number>();
  for (const seq of seqs) {
    const at = bySeq.get(seq);
    if (at === undefined || archive[at]?.role !== 'user') continue;
    for (const reply of replyTurnSeqs(archive.slice(at + 1))) replies.add(reply);
  }
  return [...replies].sort((a, b) => a - b);
}

/**
 * The rest of the turn after each of `seqs` (up to the next person's message), in order: the bot's
 * answer that read a tool result at one of them. `archive` holds each of them and the turn after it,
 * in seq order.
 */
export function turnRestAfter(
  archive: readonly Pick<StoredMessage, 'seq' | 'role'>[],
  seqs: readonly number[],
): number[] {
  const rest = new Set<number>();
  for (const seq of seqs) {
    const at = archive.findIndex((m) => m.seq === seq);
    if (at >= 0) for (const next of replyTurnSeqs(archive.slice(at + 1))) rest.add(next);
  }
  return [...rest].sort((a, b) => a - b);
}

/** Consecutive words of a taken-back message a reply must repeat to count as quoting it. */
export const QUOTE_WORDS = 6;

function quoteWords(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

/**
 * The seqs of the bot's messages in `later` that quote one of `removed`: they repeat `QUOTE_WORDS`
 * consecutive words of it (all of it, when it is shorter), the way a reply repeats what it was shown.
 * A run of words, not a bag of them: a reply that shares a few words with a message does not quote
 * it. Its prompt held the message (it came after it), so it may be derived from it; a take-back
 * tombstones such replies with the message.
 */
export function repliesQuoting(
  later: readonly Pick<StoredMessage, 'seq' | 'role' | 'text'>[],
  removed: readonly Pick<StoredMessage, 'seq' | 'text'>[],
): number[] {
  const runs = new Set<string>();
  for (const m of removed) {
    const words = quoteWords(m.text);
    const n = Math.min(QUOTE_WORDS, words.length);
    if (n < 2) continue;
    for (let i = 0; i + n <= words.length; i++) runs.add(words.slice(i, i + n).join(' '));
  }
  if (runs.size === 0) return [];
  const lengths = [...new Set([...runs].map((r) => r.split(' ').length))];
  const first = Math.min(...removed.map((m) => m.seq));
  return later
    .filter((m) => m.role === 'assistant' && m.seq > first)
    .filter((m) => {
      const words = quoteWords(m.text);
      return lengths.some((n) => {
        for (let i = 0; i + n <= words.length; i++)
          if (runs.has(words.slice(i, i + n).join(' '))) return true;
        return false;
      });
    })
    .map((m) => m.seq);
}

export function planDeletion(input: DeletionInput): DeletionPlan {
  const deleted = [...new Set(input.deleted)].sort((a, b) => a - b);
  const replies = repliesTo(input.archive, deleted);
  const all = [...new Set([...deleted, ...replies])].sort((a, b) => a - b);
  const redact = seqRanges(all);
  const prefixEnd = input.prefix.spans.reduce((end, s: Span) => Math.max(end, s.toSeq), 0);
  return {
    redact,
    replies,
    raw: all.filter((seq) => seq > prefixEnd && seq <= input.prefix.headSeq),
    compacted: all.filter((seq) => seq <= prefixEnd),
    resummarize: spansToResummarize(input.prefix, redact).map((s) => ({
      fromSeq: s.fromSeq,
      toSeq: s.toSeq,
    })),
  };
}

/**
 * The memories derived from `ranges`: those whose source range (the seqs the summarizer named for
 * it) holds a taken-back seq. Whatever their words: a memory that quotes the fact goes even when
 * another message of its range shares a word with it. A memory also learned elsewhere (the same fact
 * stated in another message) is dropped with it and comes back when a later pass learns it again.
 */
export function memoriesOver<M extends Pick<Memory, 'fromSeq' | 'toSeq'>>(
  memories: readonly M[],
  ranges: readonly SeqRange[],
): M[] {
  return memories.filter((m) => overlapsAny(m, ranges));
}
