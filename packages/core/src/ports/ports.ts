import type { TruncationPlan } from '../model/context-writes.js';
import type {
  ArchivedMessage,
  ContextMessage,
  ContextView,
  PrefixView,
  Span,
  StoredMessage,
} from '../model/model.js';
import type { Calibration } from '../model/tokens.js';
import type { HeldMessage } from '../plans/locate-change.js';
import type { TruncationPlanResult } from '../plans/plan-emergency-truncation.js';
import type { StubRequest } from '../plans/plan-microcompaction.js';
import type { SummaryResult } from '../plans/plan-splice.js';
import type { SummaryReplacement } from '../plans/plan-summary-replacement.js';

/*
 * Requests written once, beside the planner that plans on them (plans cannot import ports without a
 * cycle): a field added to the port is a field the planner sees.
 */
export type { HeldMessage, StubRequest, SummaryReplacement };

/** A message to append, measured by the caller (see `measureMessage`); the store assigns the seq. */
export interface NewMessage extends Omit<ArchivedMessage, 'seq'> {
  /** The platform's id (Slack ts, Discord snowflake); a second append with the same id is a no-op. */
  readonly platformMessageId?: string;
  /** Tokens of the whole message. */
  readonly tokens: number;
  /** Tokens of the message as it enters the context (clipped when oversized). */
  readonly contextTokens: number;
  /** The clipped text, when the context holds a clipped copy. */
  readonly contextText?: string;
  readonly omittedTokens?: number;
  /**
   * A bot reply's provenance beyond its turn: the memories recalled into the prompt it answered. A
   * take-back that drops one of them takes the reply back too (`ArchiveReader.findRecalling`).
   */
  readonly recalledMemories?: readonly string[];
}

export interface AppendResult {
  readonly seq: number;
  /** False when the platform message id was stored already (a Slack retry, a Discord resend). */
  readonly inserted: boolean;
  /** The channel's generation and context tokens after the append. */
  readonly generation: number;
  readonly contextTokens: number;
  /**
   * The channel's newest seq after the append: `seq` for a message just inserted; for a redelivery,
   * the store's head, past `seq` when more was archived since (by another replica too), so a cache
   * that is behind can tell.
   */
  readonly headSeq: number;
}

export type SpliceOutcome =
  | {
      readonly kind: 'splice';
      readonly generation: number;
      readonly tokensBefore: number;
      readonly tokensAfter: number;
      readonly messagesRemoved: number;
    }
  | { readonly kind: 'stale'; readonly reason: string }
  /** A follow-up whose predecessor has not spliced yet (see `planSplice`); nothing changed. */
  | { readonly kind: 'gap'; readonly reason: string }
  | { readonly kind: 'noop'; readonly reason: 'already_applied' };

export type TruncationOutcome =
  | {
      readonly kind: 'truncate';
      readonly plan: TruncationPlan;
      readonly generation: number;
      readonly tokensBefore: number;
      readonly tokensAfter: number;
    }
  /** The planner's refusal, passed through (`stale`, `empty`, `all_protected`: see `TruncationPlanResult`). */
  | Extract<TruncationPlanResult, { kind: 'nothing' }>;

export interface TruncationRequest {
  readonly fraction: number;
  readonly protectRecent: number;
  readonly markerTokens: number;
  /** The generation the decision was made on; when the channel has moved on, nothing is cut. */
  readonly expectedGeneration?: number;
}

export type StubOutcome =
  | {
      readonly kind: 'stubbed';
      readonly generation: number;
      /** Context tokens (spans and raw) before and after. */
      readonly tokensBefore: number;
      readonly tokensAfter: number;
      readonly stubbed: number;
    }
  | { readonly kind: 'stale'; readonly reason: string };

/** A channel as `ChannelDirectory.listChannels` gives it: its counters, without spans or messages. */
export interface ChannelSummary {
  readonly key: string;
  readonly headSeq: number;
  readonly generation: number;
  /** Tokens of the active spans and the raw messages (`ContextView.tokens`). */
  readonly tokens: number;
  /**
   * Tool results microcompaction has stubbed in the channel, ever, and the context tokens that saved,
   * as the store counts them; absent where only a live context is at hand (`/context`).
   */
  readonly microcompaction?: { readonly stubbed: number; readonly tokensSaved: number };
  /** When the channel last changed (a message, a splice, a truncation), epoch ms, where the store keeps it. */
  readonly lastActiveAt?: number;
  /** The channel's calibration, where the store reads it with the list (saves a query per channel). */
  readonly calibration?: Calibration;
}

/** A message as the retention sweep reads it (`ArchiveReader.archiveTimes`). */
export interface ArchiveTime {
  readonly seq: number;
  /** Epoch ms: the platform's time of the message, else when it was archived. */
  readonly at: number;
  /** A tombstone already (`REDACTED_MESSAGE`). */
  readonly taken: boolean;
}

/** A channel as the bot's context cache holds it. */
export interface LoadedChannel {
  readonly context: ContextView;
  readonly calibration: Calibration;
}

/**
 * What a channel's context holds after a seq (`TurnLog.loadAfter`): the channel's counters now, and
 * the raw messages past that seq as `loadContext` gives them (the tail of its `raw`).
 */
export interface ContextDelta {
  readonly generation: number;
  readonly headSeq: number;
  /** Tokens of the whole context, spans and raw (`ContextView.tokens`), not of `raw` alone. */
  readonly tokens: number;
  /** The raw messages with a seq past the one asked after, oldest first: clipped copies and stubs as they are. */
  readonly raw: readonly ContextMessage[];
}

/** How an append is made: under a channel lease's fence, or not. */
export interface AppendOptions {
  /**
   * The fence of the channel lease the writer holds (`ChannelLease.fence`). The store keeps the
   * greatest fence an append brought; an append whose fence is lower stores nothing and throws
   * `FencedAppendError`, so a holder whose lease passed on cannot write. Absent: not checked, and the
   * stored fence stays.
   */
  readonly fence?: number;
}

/*
 * A channel's store, split by what each caller needs: the turn log, reading the archive, compaction's
 * writes, taking things back, and the directory. One store (Postgres, or the in-memory reference)
 * implements them all; each caller names the ports it uses.
 */

/** The turn path's side of a channel: messages appended as they arrive and the working context
 * (with its calibration) read back, which the bot's context cache holds. */
export interface TurnLog {
  /**
   * Appends a message at head + 1; idempotent on `platformMessageId`. With a fence
   * (`AppendOptions.fence`) lower than the channel's, nothing is stored and `FencedAppendError` is
   * thrown, a redelivery's too. A redelivery changes nothing, not even the stored fence.
   */
  append(channelKey: string, message: NewMessage, options?: AppendOptions): Promise<AppendResult>;
  /**
   * Appends messages at consecutive seqs in one write, with nothing from another writer between them:
   * a tool call and its results, which must stay adjacent. They have no platform id (never posted,
   * never redelivered). A fence is checked as `append` checks it: all are stored, or none.
   */
  appendAll(
    channelKey: string,
    messages: readonly NewMessage[],
    options?: AppendOptions,
  ): Promise<AppendResult[]>;
  /**
   * The working context and the calibration together, in one round trip: what the bot's context
   * cache loads on a miss. Its cost follows the context, never the archived history.
   */
  loadChannel(channelKey: string): Promise<LoadedChannel>;
  /** The working context: active spans, then the raw messages after them (clipped copies where clipped). */
  loadContext(channelKey: string): Promise<ContextView>;
  /**
   * The channel's generation, head and context tokens, and its raw messages after `afterSeq`, in one
   * read whose cost follows what came after: how a cached context catches up with another writer's
   * appends. Every write but an append that changes what `loadContext` gives bumps the generation,
   * so a cache at the same generation differs from the store by appends alone, and this tail brings
   * it level; at another generation it must load the context whole.
   */
  loadAfter(channelKey: string, afterSeq: number): Promise<ContextDelta>;
  /** The channel's generation only: a cheap check that a cached context is still current. */
  generation(channelKey: string): Promise<number>;
  calibration(channelKey: string): Promise<Calibration>;
  setCalibration(channelKey: string, calibration: Calibration): Promise<void>;
}

/** Reading what a channel said: whole archived messages and the compacted prefix, for a pass,
 * the history tools, the dashboard and the status. */
export interface ArchiveReader {
  /**
   * The compacted prefix only (generation, head and active spans), without the raw messages: what a
   * pass needs to snapshot its range, at a fraction of `loadContext`'s cost on a full window.
   */
  loadPrefix(channelKey: string): Promise<PrefixView>;
  /** Whole archived messages fromSeq..toSeq, in order. */
  readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]>;
  /**
   * The distinct authors of the archived messages fromSeq..toSeq, sorted: who may be a memory's
   * speaker (see `validateMemories`), also where summaries already cover the range.
   */
  readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]>;
  /**
   * A deletion or an edit that names no thread (`MessageChange.threadUnknown`): which conversations
   * nested under `channelKey` (its threads, `threadKeyRange`: not the channel itself, nor a channel
   * whose key it prefixes) hold messages under these platform ids, by key (code-unit order) then id.
   * Ids no thread holds are left out. Its cost follows the channel's threads, never the archive.
   */
  findInThreads(channelKey: string, platformMessageIds: readonly string[]): Promise<HeldMessage[]>;
  /**
   * The seqs of the channel's messages whose prompt recalled one of `memoryIds` (see
   * `NewMessage.recalledMemories`), in order: the copies a take-back of those memories reaches.
   */
  findRecalling(channelKey: string, memoryIds: readonly string[]): Promise<number[]>;
  /**
   * The channel's messages after `afterSeq`, up to `limit`, in seq order, as the retention sweep
   * reads them: seq, when it was said (its platform time, else when it was archived; epoch ms) and
   * whether it is a tombstone already. No text.
   */
  archiveTimes(channelKey: string, afterSeq: number, limit: number): Promise<ArchiveTime[]>;
}

/** Compaction's writes to the working context, each under the channel lock and planned on the state
 * found there (`planSplice`, `planEmergencyTruncation`, `planStubs`). */
export interface ContextWriter {
  /**
   * Puts a finished summary in place: under the channel lock, re-reads the active spans, applies
   * `planSplice`, bumps the generation and the token totals, all in one transaction.
   */
  splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome>;
  /** Emergency truncation under the channel lock, planned on the state it finds there. */
  truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome>;
  /**
   * Microcompaction: puts stubs in place of raw tool results' context copies under the channel lock,
   * if the channel is still at `expectedGeneration` and every stubbed seq is still a raw tool result
   * not stubbed yet, named once (else `stale`, nothing changed: a seq named twice is refused). The raw
   * token total moves by the difference and the generation is bumped; no stubs change nothing
   * (`stubbed` 0, the generation unchanged). The archive keeps the results whole; a pass over them
   * reads the stubs.
   */
  stubToolResults(channelKey: string, request: StubRequest): Promise<StubOutcome>;
}

/** Every channel's counters, for operators (`ebb status`, the dashboard), not the hot path. */
export interface ChannelDirectory {
  /** Every channel the store holds, ordered by key: for operators (`ebb status`), not the hot path. */
  listChannels(): Promise<ChannelSummary[]>;
  /** One channel as `listChannels` gives it, or undefined when the store holds no such channel. */
  channelSummary(channelKey: string): Promise<ChannelSummary | undefined>;
}

/** Spans are returned in seq order; a helper for stores and tests. */
export function sortSpans<T extends Pick<Span, 'fromSeq'>>(spans: readonly T[]): T[] {
  return [...spans].sort((a, b) => a.fromSeq - b.fromSeq);
}

export * from './change-ports.js';
export * from './memory-ports.js';
export * from './model-ports.js';
export * from './queue-ports.js';
export * from './run-ports.js';
export * from './take-back-ports.js';
