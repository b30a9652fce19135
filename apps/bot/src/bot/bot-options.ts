/** What a `Bot` is built from: its stores, queue, model, platforms' parts and the hooks it reports to. */
import type { ChannelPassSettings, TakeBackFinish } from '@ebb/compaction';
import type { EbbConfig } from '@ebb/config';
import type {
  AnswerClaims,
  AppendFeed,
  ArchiveReader,
  BudgetNotices,
  BudgetOver,
  ChannelDirectory,
  ChannelLeases,
  ChatModel,
  CheckpointEraser,
  CompactionEventSink,
  CompactionQueue,
  ContextNotifier,
  ContextWriter,
  Forgetting,
  InboundSpool,
  Logger,
  MemoryStore,
  Platform,
  PlatformChanges,
  RunStore,
  SpendPeriod,
  SpendScope,
  TakeBack,
  TakeBackLog,
  TurnLog,
  UsageStore,
} from '@ebb/core';
import type { ToolCallSample } from '@ebb/observability';
import type { Toolbox } from '@ebb/tools';
import type { ChangeReport } from './change-report.js';

export interface BotOptions {
  readonly config: () => EbbConfig;
  /** The channel store, with the take-backs it records beside its tombstones. */
  readonly channels: TurnLog &
    ArchiveReader &
    ContextWriter &
    Forgetting &
    PlatformChanges &
    Pick<ChannelDirectory, 'listChannels'> & { readonly takeBacks: TakeBackLog };
  readonly memories: MemoryStore;
  readonly runs: RunStore & CheckpointEraser;
  readonly queue: CompactionQueue;
  readonly notifier: ContextNotifier;
  /** The model that answers in a channel (channels may use different models). */
  /** The model that answers in a channel: its `[llm] model`, or `model` when given (`[budget] cheaper_model`). */
  readonly chatModel: (channelKey: string, model?: string) => ChatModel;
  readonly logger: Logger;
  readonly botName?: string;
  /** Compaction events, for logs and the web channel's stream. */
  readonly onEvent?: CompactionEventSink;
  /**
   * Where chat messages wait while the archive is away (Slack and Discord do not redeliver). Without
   * it such a message gets an apology and is not kept.
   */
  readonly spool?: InboundSpool;
  /** How often channels with spooled messages are replayed into the archive (default 2 s). */
  readonly spoolReplayMs?: number;
  /**
   * Who answers a message, across replicas: without it, this process's channel actors are the only
   * guard against two deliveries of one message both answering (enough for one process).
   */
  readonly claims?: AnswerClaims;
  /**
   * One turn at a time per channel across replicas (`turn-leases.ts`): without it, this process's
   * channel actors order a channel's turns, which is enough for one process.
   */
  readonly leases?: ChannelLeases;
  /**
   * Replicas' appends, so each one's cached copy of a channel follows the others' turns without
   * reading them back (`channel-states.ts`); without it a copy that is behind reads the tail.
   */
  readonly appends?: AppendFeed;
  /** The tools channels may be allowed (built-in and MCP); without it the model is offered none. */
  readonly toolbox?: Toolbox;
  /** After every tool call: for metrics. */
  readonly onToolCall?: (sample: ToolCallSample) => void;
  /** Where each answered turn's tokens go, for a channel's cost in `ebb status` and the dashboard. */
  readonly usage?: UsageStore;
  /**
   * The clock replies are stamped by, a channel's pace measured on and its silence counted by
   * (default `Date.now`; tests move it).
   */
  readonly now?: () => number;
  /** How often channels are checked for a cache gone cold (default `CACHE_SILENCE_CHECK_MS`; tests shorten it). */
  readonly cacheSilenceCheckMs?: number;
  /**
   * The summarizer and budget of a channel's passes, for the summaries a deletion (or an edit under
   * `on_edit = "resummarize"`) writes again; default: `passSettingsResolver` without OPENAI_API_KEY.
   */
  readonly passSettings?: (channelKey: string) => Promise<ChannelPassSettings>;
  /**
   * Whether this bot runs the retention sweep (default true). False where `ebb worker` processes run
   * it (`ebb start` on Redis): beside no turns there.
   */
  readonly sweepsRetention?: boolean;
  /** After a retention sweep took back a channel's old messages: for metrics. */
  readonly onRetention?: (sweep: { readonly channel: string; readonly messages: number }) => void;
  /**
   * After each take-back this process completed, or tried to and failed (pending for the next sweep):
   * for the dashboard's live feed and the web channel's stream.
   */
  readonly onTakeBackFinished?: (takeBack: TakeBack, outcome: TakeBackFinish) => void;
  /** After every deletion or edit from a platform: for metrics. */
  readonly onMessageChange?: (report: ChangeReport & { readonly platform: string }) => void;
  /**
   * Spend limits (`[budget]`): the limits reached, once per limit and period across replicas. Without
   * them (or without `usage`) no limit is enforced.
   */
  readonly budgetNotices?: BudgetNotices;
  /** After a turn found its channel at a spend limit (`first`: this replica recorded it): for metrics. */
  readonly onBudget?: (event: {
    readonly over: BudgetOver;
    readonly scope: SpendScope;
    readonly period: SpendPeriod;
    readonly first: boolean;
  }) => void;
  /** After every turn: for metrics. */
  readonly onTurn?: (turn: {
    platform: Platform;
    /** The channel's key: the dashboard's usage series is per channel. */
    channel: string;
    answered: boolean;
    usage: number;
    durationMs: number;
  }) => void;
}
