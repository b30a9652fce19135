import type { Memory, NewMemory } from '../memory/memory.js';
import type {
  ArchivedMessage,
  ContextMessage,
  ContextView,
  PrefixView,
  SeqRange,
  Span,
  StoredMessage,
  Tier,
} from '../model/model.js';
import type { Calibration } from '../model/tokens.js';
import type { HeldMessage } from '../plans/locate-change.js';
import type { TruncationPlan, TruncationPlanResult } from '../plans/plan-emergency-truncation.js';
import type { EditedCopy } from '../plans/plan-message-rewrite.js';
import type { StubRequest } from '../plans/plan-microcompaction.js';
import type { SummaryResult } from '../plans/plan-splice.js';
import type { SummaryReplacement } from '../plans/plan-summary-replacement.js';
import type { NewTakeBack, PendingTakeBacks, TakeBack, TakeBackCounts } from '../plans/take-back.js';
import type { SummaryOutput } from './model-ports.js';

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
  | {
      readonly kind: 'edited';
      /** The message was raw in the context: its copy was replaced in place. */
      readonly raw: boolean;
      readonly generation: number;
      /** Context tokens (spans and raw) before and after. */
      readonly tokensBefore: number;
      readonly tokensAfter: number;
      /** The take-back recorded with it, when the edit asked for one. */
      readonly takeBack?: TakeBack;
    }
  /** The archive holds no such seq: nothing changed. */
  | { readonly kind: 'missing' };

/** A message as the retention sweep reads it (`ArchiveReader.archiveTimes`). */
export interface ArchiveTime {
  readonly seq: number;
  /** Epoch ms: the platform's time of the message, else when it was archived. */
  readonly at: number;
  /** A tombstone already (`REDACTED_MESSAGE`). */
  readonly taken: boolean;
}

/** A message the archive holds under a platform id. */
export interface PlatformSeq {
  readonly platformMessageId: string;
  readonly seq: number;
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

/** Every channel's counters, for operators (`ebb status`, the dashboard), not the hot path. */
export interface ChannelDirectory {
  /** Every channel the store holds, ordered by key: for operators (`ebb status`), not the hot path. */
  listChannels(): Promise<ChannelSummary[]>;
  /** One channel as `listChannels` gives it, or undefined when the store holds no such channel. */
  channelSummary(channelKey: string): Promise<ChannelSummary | undefined>;
}

export interface MemoryUpsertResult {
  /** New memories. */
  readonly added: number;
  /** Existing memories (same fingerprint in the scope) refreshed instead of duplicated. */
  readonly refreshed: number;
}

export interface MemoryQuery {
  /** The scopes the asking channel belongs to; nothing outside them is ever returned. */
  readonly scopes: readonly string[];
  readonly text: string;
  readonly limit: number;
  /**
   * Distinct topic words of `text` (`recallBar`) a memory must share to be recalled, or all of them
   * when `text` has fewer; applied before `limit`, so memories that share one word cannot crowd out
   * one that shares more. Absent: any one word of `text` is enough.
   */
  readonly minSharedTerms?: number;
}

/** Memories by where they came from (`channelKey`), who they are about, and where they may be recalled. */
export interface MemoryFilter {
  readonly channelKey?: string;
  readonly speaker?: string;
  readonly scope?: string;
}

export interface MemoryListOptions {
  /** `id` (the default): oldest first; `importance`: the most important first, then by id. */
  readonly order?: 'id' | 'importance';
  readonly limit?: number;
}

export interface MemoryStore {
  upsert(memories: readonly NewMemory[]): Promise<MemoryUpsertResult>;
  /** Full-text search ranked by relevance, importance and recency. */
  recall(query: MemoryQuery): Promise<Memory[]>;
  /** The memories the filter selects: by id, or the most important first; at most `limit`. */
  list(filter: MemoryFilter, options?: MemoryListOptions): Promise<Memory[]>;
  /** How many memories the filter selects, without reading them. */
  count(filter: MemoryFilter): Promise<number>;
  /** Deletes by id; returns how many went. */
  forget(ids: readonly string[]): Promise<number>;
}

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stale' | 'skipped';

export interface CompactionRun {
  readonly jobId: string;
  readonly channelKey: string;
  readonly tier: Tier;
  readonly status: RunStatus;
  readonly usage: number;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly generation: number;
  /** The job's `focus` and `after`, kept so a job Redis lost is enqueued again as it was. */
  readonly focus?: string;
  readonly after?: string;
  readonly attempts: number;
  readonly tokensBefore?: number;
  readonly tokensAfter?: number;
  readonly summaryTokens?: number;
  readonly memoriesAdded?: number;
  readonly model?: string;
  readonly fallback?: boolean;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly durationMs?: number;
  readonly error?: string;
  /** Epoch milliseconds. */
  readonly createdAt?: number;
  readonly finishedAt?: number;
  /** The summarizer's output, saved before memories and splice so a retry reuses it (see `RunStore.saveOutput`). */
  readonly output?: SummaryOutput;
}

/** A pass's run, from queued to finished, and its checkpoint. */
export interface RunStore {
  /**
   * Records a triggered pass (status `queued`). A second call with the same job id changes nothing,
   * except that it fills in the usage of a run a worker created first (usage NaN).
   */
  create(
    run: Pick<
      CompactionRun,
      'jobId' | 'channelKey' | 'tier' | 'usage' | 'fromSeq' | 'toSeq' | 'generation' | 'focus' | 'after'
    >,
  ): Promise<void>;
  /**
   * Marks a run `running` and counts the attempt, unless it ended for good (`completed`, `stale`):
   * a `failed` or `skipped` run is reopened, since its job is being run again. Returns the run as it
   * was, so a redelivered job whose run ended can stop (undefined when no run exists: the caller
   * creates it).
   */
  start(jobId: string): Promise<CompactionRun | undefined>;
  /**
   * Checkpoints the summarizer's output, first writer wins, and returns the output that is stored.
   * A job killed after this point and retried reuses it instead of asking the LLM again, and two
   * workers racing on one job (a lost lock) both continue with the same output: the same memories
   * (same fingerprints) and the same summary.
   */
  saveOutput(jobId: string, output: SummaryOutput): Promise<SummaryOutput>;
  /** Records an outcome; with `onlyFrom`, only when the run is in one of those statuses. */
  finish(
    jobId: string,
    outcome: Partial<Omit<CompactionRun, 'output' | 'createdAt' | 'finishedAt'>> &
      Pick<CompactionRun, 'status'>,
    options?: { readonly onlyFrom?: readonly RunStatus[] },
  ): Promise<void>;
  get(jobId: string): Promise<CompactionRun | undefined>;
  /** The channel's latest runs, newest first, at most `limit` (`RUNS_LOOKBACK` for a look over its passes). */
  recent(channelKey: string, limit: number): Promise<CompactionRun[]>;
  /**
   * Runs still `queued` or `running` that were created before `createdBefore` (epoch ms), oldest
   * first, across channels: what the reconciler looks at (see `planReconcile`).
   */
  unfinished(options: { readonly createdBefore: number; readonly limit: number }): Promise<CompactionRun[]>;
}

/**
 * Taking things back out of the runs' checkpoints (the summarizer's output, summary text and
 * memories, that `RunStore.saveOutput` keeps for a retry): forgetting (`ebb forget`) and the
 * platforms' deletions and edits erase what was taken back, so a retried run never writes it again.
 */
export interface CheckpointEraser {
  /**
   * Clears the output of the channel's runs whose range overlaps `ranges` (a checkpoint only serves
   * a retry of an unfinished run, which then summarizes again). Returns how many runs changed.
   */
  clearCheckpoints(channelKey: string, ranges: readonly SeqRange[]): Promise<number>;
  /**
   * Takes the memories whose text is one of `memoryTexts` (exact) out of every run's checkpoint, in
   * any channel (a workspace-scope memory may come from anywhere), so a retried run never stores them
   * again. Returns how many runs changed.
   */
  dropCheckpointMemories(memoryTexts: readonly string[]): Promise<number>;
}

/** Spans are returned in seq order; a helper for stores and tests. */
/**
 * How many of a channel's latest runs a look back over its passes reads: for the passes still in
 * flight, the circuit breaker's tries, the dashboard's chart and the suggestion's pass durations.
 * Far more than a channel runs at once (two passes) or in a breaker's window.
 */
export const RUNS_LOOKBACK = 50;

export function sortSpans<T extends Pick<Span, 'fromSeq'>>(spans: readonly T[]): T[] {
  return [...spans].sort((a, b) => a.fromSeq - b.fromSeq);
}

export * from './model-ports.js';
export * from './queue-ports.js';
