/**
 * A take-back: what a person deleted (or edited under `on_edit = "resummarize"`), what `ebb forget`
 * selected, or what a retention sweep let go, as a durable rule rather than a wait. It is recorded in
 * the transaction that tombstones the messages and bumps the channel's take-back mark, so:
 *
 * - every copy derived from its seqs is found by query (memories whose source range holds one,
 *   summaries over one, checkpoints of runs over one, the bot's replies that recalled such a memory),
 *   and any process finishes a take-back whose process died (it stays `pending` until then);
 * - a compaction pass reads the channel's mark before its snapshot; whatever it later writes from that
 *   snapshot (a checkpoint, memories, a splice) is refused when a take-back with a higher mark covers
 *   a seq of its range (`takenBackOver`), and it reads the redacted archive again instead. Between its
 *   model calls it checks the same, so no request built from the old text is sent after the take-back.
 */
import type { SeqRange } from '../model/model.js';
import { overlapsAny } from './plan-redaction.js';

export const TAKE_BACK_KINDS = ['deleted', 'edited', 'forget', 'retention'] as const;
export type TakeBackKind = (typeof TAKE_BACK_KINDS)[number];

/** Each kind in a word, as operators read it (`ebb status`, the dashboard). */
export const TAKE_BACK_KIND_WORDS = {
  deleted: 'deletion',
  edited: 'edit',
  forget: 'forget',
  retention: 'retention',
} as const satisfies Record<TakeBackKind, string>;

/** A take-back to record with the tombstones (the store gives it its id and mark). */
export interface NewTakeBack {
  readonly kind: TakeBackKind;
  /** The seqs taken back (the messages, the replies and tool results derived from them). */
  readonly ranges: readonly SeqRange[];
  /** Their platform ids, where they had one: the spool's files are scrubbed of them. */
  readonly platformMessageIds: readonly string[];
}

export interface TakeBack extends NewTakeBack {
  readonly id: string;
  readonly channelKey: string;
  /** The channel's take-back mark this one set: 1, 2, … per channel. */
  readonly mark: number;
  readonly status: 'pending' | 'completed';
  /** Epoch ms. */
  readonly createdAt: number;
  readonly attempts: number;
}

/**
 * A channel's take-backs still pending, for operators (`ebb status`, the dashboard): how many, and
 * the oldest's kind and when it was recorded. Counts and times, never text.
 */
export interface PendingTakeBacks {
  readonly channelKey: string;
  /** At least 1: a channel with none pending has no entry. */
  readonly pending: number;
  readonly oldest: {
    readonly kind: TakeBackKind;
    /** Epoch ms. */
    readonly createdAt: number;
  };
}

/** What completing a take-back reached: counts, never text. */
export interface TakeBackCounts {
  readonly memories: number;
  readonly checkpoints: number;
  readonly summaries: number;
}

/**
 * Whether a take-back recorded after `mark` (the channel's mark when a pass read its snapshot) covers
 * a seq of `range`: then what the pass read may hold taken-back text.
 */
export function takenBackOver(
  takeBacks: readonly Pick<TakeBack, 'mark' | 'ranges'>[],
  mark: number,
  range: SeqRange,
): boolean {
  return takeBacks.some((t) => t.mark > mark && overlapsAny(range, t.ranges));
}

/** The bounds of a take-back's ranges (the store's overlap index). */
export function takeBackBounds(ranges: readonly SeqRange[]): SeqRange {
  if (ranges.length === 0) return { fromSeq: 0, toSeq: 0 };
  return {
    fromSeq: Math.min(...ranges.map((r) => r.fromSeq)),
    toSeq: Math.max(...ranges.map((r) => r.toSeq)),
  };
}
