/** The take-backs a channel recorded: what a pass checks, and the durable queue of copies still to take back. */
import type { SeqRange } from '../model/model.js';
import type { NewTakeBack, PendingTakeBacks, TakeBack, TakeBackCounts } from '../plans/take-back.js';

/**
 * The take-backs a channel recorded (see `plans/take-back.ts`): what a pass checks before it sends,
 * checkpoints, stores or splices what it read, and the durable queue of take-backs whose copies are
 * still being rewritten, which any process finishes. Recording happens with the tombstones
 * (`Forgetting.redactArchive`, `PlatformChanges.editMessage`), or alone (`record`: `ebb forget` without
 * `--archive`), always under the channel lock.
 */
export interface TakeBackLog {
  /** The channel's take-back mark now (0 before its first): read before a pass's snapshot. */
  takeBackMark(channelKey: string): Promise<number>;
  /** The channel's take-backs with a mark above `mark` that cover a seq of `range`, oldest first. */
  takenBackSince(channelKey: string, mark: number, range: SeqRange): Promise<TakeBack[]>;
  /** Records a take-back that tombstones nothing (`ebb forget` without `--archive`). */
  recordTakeBack(channelKey: string, takeBack: NewTakeBack): Promise<TakeBack>;
  /**
   * Claims up to `limit` pending take-backs that no process holds (never claimed, or their lease ran
   * out), oldest first, for `leaseMs`; with `id`, that one only (the process that recorded it, at
   * once). Each claim counts an attempt.
   */
  claimTakeBacks(options: {
    readonly limit: number;
    readonly leaseMs: number;
    readonly id?: string;
  }): Promise<TakeBack[]>;
  /** Holds a claim this process is working on for another `leaseMs` (a rewrite may take minutes). */
  renewTakeBack(id: string, leaseMs: number): Promise<void>;
  /** Marks a take-back completed with what it reached; releases a claim that failed (`error`). */
  finishTakeBack(
    id: string,
    outcome: { readonly counts: TakeBackCounts } | { readonly error: string },
  ): Promise<void>;
  /** Take-backs still pending, oldest first (`channelKey`: of one channel): for status and the dashboard. */
  pendingTakeBacks(channelKey?: string): Promise<TakeBack[]>;
  /**
   * Per channel with a take-back pending (by key; `channelKey`: that one only): how many, and the
   * oldest's kind and time. One grouped read however many channels there are (the dashboard's list).
   */
  pendingTakeBackCounts(channelKey?: string): Promise<PendingTakeBacks[]>;
}
