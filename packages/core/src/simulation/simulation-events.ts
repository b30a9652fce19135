/** What `ebb simulate` is given (a transcript, options) and what it reports (its events, and how one is made). */
import type { EventTier } from '../decision/compaction-events.js';
import type { CompactionPolicy } from '../model/compaction-policy.js';
import type { Tier, ToolCall } from '../model/model.js';
import type { Tokenizer } from '../model/tokens.js';
import type { PrefixCacheTotals } from '../usage/prefix-cache.js';

export interface TranscriptMessage {
  readonly role: 'user' | 'assistant' | 'tool';
  readonly author: string;
  readonly text: string;
  readonly ts?: string;
  /** An assistant message that calls tools; its results are the `tool` messages right after it. */
  readonly toolCalls?: readonly ToolCall[];
  /** A tool result: the id of the call it answers. */
  readonly toolCallId?: string;
}

export interface SimulationOptions {
  readonly policy: CompactionPolicy;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  /**
   * Tokens every prompt spends besides the context: the system prompt and the tool definitions (the
   * built-in ones the channel allows; a running bot adds its MCP tools), and the memories a turn
   * recalls (`ebb simulate` simulates none; the bot reserves what each turn recalled).
   */
  readonly reservedTokens: number;
  /**
   * Tokens every prompt starts with before the context (the system prompt and the tool definitions,
   * not memories): the prefix a provider's cache always shares. Default: `reservedTokens`.
   */
  readonly promptHeadTokens?: number;
  readonly tokenizer: Tokenizer;
  /** The channel may call read_history: stubs say how to read a result back (default: yes), as the bot's do. */
  readonly readHistory?: boolean;
  /**
   * `unsummarized`: drop archived messages once a summary covers them, so memory stays bounded on a
   * long replay (`ebb simulate --from-archive`); the decisions are the same. Default `all`.
   */
  readonly retainArchive?: 'all' | 'unsummarized';
  /** Turns between a job's start and its result (when `jobSeconds` is not set). */
  readonly jobLatency: number;
  /** Seconds between a job's start and its result, on the transcript's clock. */
  readonly jobSeconds?: number;
  /**
   * How long the provider's prefix cache keeps a prompt after its last use, on the transcript's
   * clock: a reply after a longer silence is cold (`PrefixCacheTotals.coldPrompts`). Unset: for ever.
   */
  readonly cacheTtlSeconds?: number;
  readonly emit: (event: SimulationEvent) => void;
}

export type SimulationEventName =
  | 'triggered'
  | 'enqueued'
  | 'skipped'
  | 'started'
  | 'completed'
  | 'stale'
  | 'emergency'
  | 'microcompacted'
  | 'failed';

export interface MessageEvent {
  readonly type: 'message';
  readonly seq: number;
  readonly role: string;
  readonly tokens: number;
  readonly contextTokens: number;
  readonly usage: number;
}

export interface CompactionEvent {
  readonly type: 'compaction';
  readonly event: SimulationEventName;
  readonly tier: EventTier;
  /** The turn (seq of the newest message) it happened on. */
  readonly seq: number;
  readonly fromSeq: number | null;
  readonly toSeq: number | null;
  readonly usage: number;
  /** On `triggered` and `skipped`: usage when a pass started now would land (see `decideAfterTurn`). */
  readonly projectedUsage?: number;
  readonly tokensBefore: number | null;
  readonly tokensAfter: number | null;
  readonly jobId?: string;
  readonly reason?: string;
}

export interface SummaryEvent {
  readonly type: 'summary';
  readonly messages: number;
  readonly archived: number;
  readonly contextTokens: number;
  /** Highest usage after the monitor acted on a turn. */
  readonly peakUsage: number;
  /** Highest usage a new message caused before the monitor acted (above 1: an emergency cut was needed). */
  readonly peakUsageBeforeMonitor: number;
  /** Passes started per tier; `emergency` counts truncations. */
  readonly tiers: Record<Tier, number>;
  /** Passes that healed truncated spans. */
  readonly heals: number;
  /** Passes queued while another pass of the channel was in flight, over the next range. */
  readonly followUps: number;
  /** Waiting passes replaced by a pass of a higher tier. */
  readonly escalations: number;
  /** Passes that waited out the cooldown before they ran. */
  readonly delayed: number;
  /** Passes started on a silence longer than the cache lifetime (`decideOnSilence`). */
  readonly coldPasses: number;
  readonly stale: number;
  /** Turns on which passes landed and freed little (see `CompactionMonitor.shrunk`). */
  readonly ineffective: number;
  readonly summarizerInputTokens: number;
  readonly summarizerOutputTokens: number;
  /** Turns on which microcompaction stubbed tool results, and how many results it stubbed. */
  readonly microcompactions: number;
  readonly stubbedResults: number;
  /**
   * The prompts of an answer to every participant's message (the context, no recalled memories) as
   * OpenAI's prefix cache would serve them (`prefix-cache.ts`).
   */
  readonly promptCache: PrefixCacheTotals;
}

export type SimulationEvent = MessageEvent | CompactionEvent | SummaryEvent;

/** What a step of a simulated pass reports beyond the event's name and tier. */
export type CompactionEventFields = Partial<
  Pick<
    CompactionEvent,
    'fromSeq' | 'toSeq' | 'tokensBefore' | 'tokensAfter' | 'jobId' | 'reason' | 'projectedUsage'
  >
>;

/** A compaction event at the simulation's newest message and usage; `null` where a field does not apply. */
export function compactionEvent(
  event: SimulationEventName,
  tier: EventTier,
  at: { readonly seq: number; readonly usage: number },
  fields: CompactionEventFields = {},
): CompactionEvent {
  return {
    type: 'compaction',
    event,
    tier,
    seq: at.seq,
    fromSeq: fields.fromSeq ?? null,
    toSeq: fields.toSeq ?? null,
    usage: at.usage,
    ...(fields.projectedUsage === undefined ? {} : { projectedUsage: fields.projectedUsage }),
    tokensBefore: fields.tokensBefore ?? null,
    tokensAfter: fields.tokensAfter ?? null,
    ...(fields.jobId === undefined ? {} : { jobId: fields.jobId }),
    ...(fields.reason === undefined ? {} : { reason: fields.reason }),
  };
}
