/** The channel store as taking things back sees it: forgetting, and the platforms' deletions and edits. */
import type { SeqRange, StoredMessage } from '../model/model.js';
import type { EditedCopy, MessageEdited } from '../plans/plan-message-rewrite.js';
import type { SummaryReplacement } from '../plans/plan-summary-replacement.js';
import type { NewTakeBack, TakeBack } from '../plans/take-back.js';

export interface AuthoredSeqs {
  readonly channelKey: string;
  readonly seqs: readonly number[];
}

export type ReplaceSummaryOutcome =
  | {
      readonly kind: 'replaced';
      readonly generation: number;
      readonly tokensBefore: number;
      readonly tokensAfter: number;
    }
  | { readonly kind: 'missing' };

export interface RedactArchiveOutcome {
  /** Archived messages overwritten. */
  readonly redacted: number;
  /** Of those, raw messages in the working context. */
  readonly raw: number;
  /** The channel's generation after (bumped when a raw message changed). */
  readonly generation: number;
  /** The take-back recorded with the tombstones (none when the archive held none of the seqs). */
  readonly takeBack?: TakeBack;
}

/** A retired summary of a channel's prefix (the audit trail of splices), with its text. */
export interface EarlierSummary {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
}

/**
 * A message's new text, measured as an append measures it (see `toNewMessage`): the context copy
 * `planMessageEdit` plans on, and what the archive keeps.
 */
export interface MessageEdit extends EditedCopy {
  /** The whole new text and its tokens: what the archive keeps (the old text is not kept). */
  readonly text: string;
  readonly tokens: number;
  /** Recorded with the edit (`on_edit = "resummarize"`: the old text's copies are traced and rewritten). */
  readonly takeBack?: NewTakeBack;
}

export type EditMessageOutcome =
  | MessageEdited
  /** The archive holds no such seq: nothing changed. */
  | { readonly kind: 'missing' };

/** A message the archive holds under a platform id. */
export interface PlatformSeq {
  readonly platformMessageId: string;
  readonly seq: number;
}

/**
 * Taking things back (`ebb forget`, a platform's deletion, retention): find the messages, overwrite
 * them with tombstones, blank retired summaries and put summaries written again in place.
 */
export interface Forgetting {
  /**
   * Forgetting: the seqs `author` wrote, per channel (channels by key, seqs in order); with
   * `channelKey`, in that channel only (by its author index: cheap enough for a deletion).
   */
  findAuthored(author: string, channelKey?: string): Promise<AuthoredSeqs[]>;
  /**
   * Forgetting: the seqs whose text (or a tool call's name or arguments) holds `text`, ignoring case,
   * per channel (channels by key, seqs in order). Whoever wrote them: the bot's replies that repeat a
   * fact are found too. A scan of the archive: for an operator's command, not for a turn.
   */
  findContaining(text: string): Promise<AuthoredSeqs[]>;
  /**
   * Forgetting with `--archive`: overwrites archived messages with their tombstones (same seq; text,
   * tokens and tool calls as given, no clipped copy). Raw messages in the context change with them
   * under the channel lock: the raw token total moves by the difference and the generation is
   * bumped, so bots reload. Seqs the archive does not hold are ignored; a seq given twice counts once
   * (the last tombstone given for it wins). `takeBack` is recorded in the same transaction (the
   * channel's take-back mark moves), when the archive held any of the seqs: see `TakeBackLog`.
   * `undefined` only for a take-back too large for one transaction (a retention sweep): its batches
   * are tombstoned first and the take-back recorded after the last (`recordTakeBack`), so a pass that
   * read any of them before has a lower mark.
   */
  redactArchive(
    channelKey: string,
    tombstones: readonly StoredMessage[],
    takeBack: NewTakeBack | undefined,
  ): Promise<RedactArchiveOutcome>;
  /**
   * Forgetting: retired summary spans (kept as the audit trail of splices) that overlap the ranges
   * keep their range and numbers but their text becomes `REDACTED_SUMMARY`. Returns how many changed.
   */
  redactRetiredSpans(channelKey: string, ranges: readonly SeqRange[]): Promise<number>;
  /**
   * Forgetting: puts a summary written again (from the archive, some messages redacted) in place of
   * the active summary span over exactly its range, if that span is still the one job `replaces`
   * wrote. Under the channel lock: the old span is retired, the span token total moves by the
   * difference, the generation is bumped. `missing` when that span is no longer active (a pass
   * replaced it meanwhile): nothing changed, plan again. `splice` cannot do this: to `planSplice` an
   * equal range is a retried job, a no-op.
   */
  replaceSummary(channelKey: string, replacement: SummaryReplacement): Promise<ReplaceSummaryOutcome>;
  /**
   * Forgetting a few recent seqs: the retired summary span from `fromSeq` ending latest before
   * `beforeSeq` that still holds its text (not blanked by forgetting, not `PENDING_SUMMARY`). It
   * summarizes what came before those seqs, so a span over them can be written again from it and the
   * archive after it rather than from its whole range. (The in-memory store keeps retired texts too.)
   */
  summaryBefore(channelKey: string, fromSeq: number, beforeSeq: number): Promise<EarlierSummary | undefined>;
}

/** What a platform's change of a stored message needs: the messages by their platform ids, and an edit. */
export interface PlatformChanges {
  /**
   * Deletions and edits on the platforms: the seqs of the messages stored under these platform ids
   * (ids the archive never held are left out), in seq order.
   */
  findByPlatformIds(channelKey: string, platformMessageIds: readonly string[]): Promise<PlatformSeq[]>;
  /**
   * An edit on the platform: the archived message keeps only the new text (its tool calls and role
   * unchanged). A raw copy in the context is replaced in place under the channel lock: the raw token
   * total moves by the difference and the generation is bumped, so bots reload. A message inside the
   * compacted prefix changes in the archive only.
   */
  editMessage(channelKey: string, edit: MessageEdit): Promise<EditMessageOutcome>;
}
