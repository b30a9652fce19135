/**
 * What the dashboard's API returns, and the port the bot implements to answer it
 * (`DashboardSource`). Everything here is JSON: numbers, strings, ISO times, no message text in
 * events (the page reads text through `history`, behind the same admin rule).
 *
 *   GET /api/dashboard/channels                    DashboardChannelList (every channel, every platform)
 *   GET /api/dashboard/channels/:key               DashboardChannelDetail (passes, top memories, take-backs)
 *   GET /api/dashboard/channels/:key/history       DashboardHistory (?before=seq | ?after=seq, &limit=)
 *   GET /api/dashboard/channels/:key/usage         DashboardUsage (points and pass marks over time)
 *   GET /api/dashboard/channels/:key/suggestion    DashboardSuggestion (`ebb simulate --suggest` on its last messages)
 *   GET /api/dashboard/events                      text/event-stream of DashboardEvent, every channel
 */

export type DashboardTier = 'background' | 'aggressive' | 'emergency';

/** The highest threshold a channel's usage has reached (core's `thresholdReached`). */
export type DashboardReached = 'none' | DashboardTier;

export interface DashboardThresholds {
  /** Absent when the channel has microcompaction off. */
  readonly microcompact?: number;
  readonly background: number;
  readonly aggressive: number;
  readonly emergency: number;
}

/** A channel as the list shows it: cheap to compute for 1,000 channels (no query per channel). */
export interface DashboardChannelRow {
  readonly key: string;
  /** `slack`, `discord`, `web`: the key's first part. */
  readonly platform: string;
  /** Share of the prompt budget in use (1 = full), calibrated. */
  readonly usage: number;
  readonly reached: DashboardReached;
  readonly thresholds: DashboardThresholds;
  readonly tokens: {
    readonly context: number;
    readonly reserved: number;
    readonly budget: number;
    /**
     * The factor on Ebb's count learned from the provider's (1: none yet): usage is
     * (context + reserved) × calibration / budget.
     */
    readonly calibration: number;
    /** (context + reserved) × calibration, rounded: the prompt's tokens as the provider counts them. */
    readonly provider: number;
  };
  /** Archived messages (the head seq). */
  readonly messages: number;
  /** When the channel last changed (a message, a pass), ISO; null when the store does not say. */
  readonly lastActiveAt: string | null;
  /** Its take-backs not yet complete, by any process (one grouped read for the whole list). */
  readonly takeBacks: DashboardTakeBacks;
}

/**
 * A channel's take-backs (deletions, edits, `ebb forget`, retention) still pending: until each is
 * complete, the summaries over what it took back are set aside or not yet written again.
 */
export interface DashboardTakeBacks {
  readonly pending: number;
  /** The oldest still pending (`createdAt` ISO); null when none is. */
  readonly oldest: {
    readonly kind: 'deleted' | 'edited' | 'forget' | 'retention';
    readonly createdAt: string;
  } | null;
}

/** `GET /api/dashboard/channels`. */
export interface DashboardChannelList {
  readonly channels: readonly DashboardChannelRow[];
}

/** A pass as the dashboard lists it (a subset of `ebb status --json`'s passes). */
export interface DashboardPass {
  readonly jobId: string;
  readonly tier: string;
  readonly status: string;
  /** Usage when the pass was triggered (null when a worker recorded the run first). */
  readonly usage: number | null;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly tokensBefore: number | null;
  readonly tokensAfter: number | null;
  readonly summaryTokens: number | null;
  readonly memoriesAdded: number | null;
  readonly fallback: boolean | null;
  readonly model: string | null;
  readonly durationMs: number | null;
  readonly error: string | null;
  readonly createdAt: string | null;
  readonly finishedAt: string | null;
}

export interface DashboardMemory {
  readonly type: string;
  readonly text: string;
  readonly importance: number;
  readonly speaker?: string;
}

export interface DashboardChannelDetail extends DashboardChannelRow {
  readonly spans: {
    readonly summaries: number;
    readonly truncations: number;
    readonly summaryTokens: number;
  };
  /** Archived messages in the context (not covered by a span). */
  readonly inContext: number;
  /** Tool results microcompaction has stubbed, ever, and the tokens that saved. */
  readonly microcompaction?: { readonly stubbed: number; readonly tokensSaved: number };
  /** Newest first. */
  readonly passes: readonly DashboardPass[];
  /** The channel's most important memories, at most `DASHBOARD_LIMITS.memories`, most important first. */
  readonly memories: readonly DashboardMemory[];
  /** Memories in the channel's scope in all (the list holds at most `DASHBOARD_LIMITS.memories`). */
  readonly memoryCount: number;
  /** The model calls of the last 24 hours, as `ebb status --json`'s `lastDay`; null when not recorded. */
  readonly lastDay: DashboardCost | null;
  /** Each spend limit of `[budget]` with what was spent toward it, as `ebb status --json`'s `budget`; null with none. */
  readonly budget: readonly DashboardSpendLimit[] | null;
}

/** One spend limit (`[budget]`) and what was spent toward it this period. */
export interface DashboardSpendLimit {
  readonly scope: 'channel' | 'workspace';
  readonly period: 'day' | 'month';
  readonly limitUsd: number;
  readonly spentUsd: number;
  /** ISO 8601, UTC: when the period ends. */
  readonly resetsAt: string;
}

/** A channel's model calls over a period: tokens, what the provider's cache served, cost. */
export interface DashboardCost {
  readonly calls: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly completionTokens: number;
  /** Share of the replies' prompt tokens the provider served from its prompt cache (0..1). */
  readonly replyCacheShare: number | null;
  /** Turns answered. */
  readonly replies: number;
  /** Share of the replies that came after a silence longer than the cache lifetime (0..1). */
  readonly coldReplyShare: number | null;
  /** The replies' calls at `[prices]` per 1,000 replies; null with none or a model without a price. */
  readonly usdPer1kReplies: number | null;
  /** USD at `[prices]`; null when a model used has no price. */
  readonly costUsd: number | null;
  readonly unpriced: readonly string[];
}

/** A span of the context prefix as the history shows it. */
export type DashboardSpan =
  | {
      readonly kind: 'summary';
      readonly fromSeq: number;
      readonly toSeq: number;
      readonly tokens: number;
      readonly text: string;
      readonly jobId: string;
    }
  | { readonly kind: 'truncated'; readonly fromSeq: number; readonly toSeq: number; readonly tokens: number };

export interface DashboardMessage {
  readonly seq: number;
  readonly role: 'user' | 'assistant' | 'tool';
  readonly author: string;
  /** The archived text, cut at `DASHBOARD_LIMITS.textChars` (the whole length in `chars`). */
  readonly text: string;
  readonly chars: number;
  readonly ts: string | null;
  /** Where it sits: raw in the context, or covered by the span starting at `spanFrom`. */
  readonly place: 'context' | 'summarized' | 'truncated';
  readonly spanFrom?: number;
  /** Microcompaction put this stub in the context in place of the tool result. */
  readonly stub?: { readonly text: string; readonly tokens: number };
  /** Tools an assistant message called. */
  readonly toolCalls?: readonly string[];
}

export interface DashboardHistory {
  readonly key: string;
  readonly headSeq: number;
  /** Seq of the last message covered by spans (0 when none). */
  readonly prefixEnd: number;
  /** The seqs this page holds, inclusive (to < from when empty). */
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly messages: readonly DashboardMessage[];
  /** The active spans that cover any seq up to `toSeq` (in order), so older spans show above the page. */
  readonly spans: readonly DashboardSpan[];
}

export interface DashboardUsagePoint {
  /** Epoch ms. */
  readonly at: number;
  readonly usage: number;
}

/** Something that moved usage down: a pass (from the run store), a truncation or microcompaction. */
export interface DashboardUsageMark {
  readonly at: number;
  /** Usage when it was triggered. */
  readonly usage: number;
  readonly tier: DashboardTier | 'microcompact';
  readonly status: string;
  readonly jobId?: string;
}

export interface DashboardUsage {
  readonly key: string;
  readonly thresholds: DashboardThresholds;
  readonly points: readonly DashboardUsagePoint[];
  readonly marks: readonly DashboardUsageMark[];
}

/** The dashboard's live feed: numbers and ids only; the page fetches what changed. */
export type DashboardEvent =
  | { readonly type: 'turn'; readonly channel: string; readonly usage: number; readonly at: number }
  | {
      readonly type: 'compaction';
      readonly channel: string;
      readonly event: string;
      readonly tier: string;
      readonly usage?: number;
      readonly jobId?: string;
      readonly at: number;
    }
  /** A context changed elsewhere (a worker in another process spliced it, or completed a take-back). */
  | { readonly type: 'context'; readonly channel: string; readonly generation: number; readonly at: number }
  /**
   * A take-back (a deletion, an edit, `ebb forget`, a retention sweep) this process completed, or
   * tried to and failed (it stays pending for the next sweep). One completed by another process
   * arrives as that channel's `context` event.
   */
  | {
      readonly type: 'takeback';
      readonly channel: string;
      readonly takeBack: string;
      readonly kind: string;
      readonly status: 'completed' | 'failed';
      readonly at: number;
    };

/** What one replay of a channel's traffic came to (`ebb simulate --suggest`'s columns). */
export interface DashboardReplayOutcome {
  readonly messages: number;
  readonly emergencies: number;
  readonly passes: { readonly background: number; readonly aggressive: number; readonly heals: number };
  readonly peakUsage: number;
  /** Share of the reply prompts' tokens a prefix cache can serve (0..1). */
  readonly cacheableShare: number;
  /** USD per 1,000 messages (reply prompts and summarizer); null when a model has no price. */
  readonly costPerThousand: number | null;
  readonly tokensPerThousand: number;
}

/** Seconds a replayed pass took: the 90th percentile of the channel's recorded passes (or an option, or a default). */
export interface DashboardPassSeconds {
  readonly replayed: number;
  readonly source: 'recorded' | 'option' | 'default';
  readonly runs: number;
  readonly median: number | null;
  readonly p90: number | null;
}

/** What a suggestion's search cost. */
export interface DashboardSearchCost {
  readonly candidates: number;
  /** Candidates `ebb config check` would refuse, left out. */
  readonly refused: number;
  /** Reads of the archive (each replays every candidate of its round side by side). */
  readonly reads: number;
  readonly replays: number;
  readonly ms: number;
}

/**
 * `GET /api/dashboard/channels/:key/suggestion`: `ebb simulate --from-archive KEY --suggest --json`
 * on the channel's last `DASHBOARD_LIMITS.suggestionMessages` messages, read-only (the page shows
 * the table and the block; nothing is applied). Computed on request, then served from a cache.
 */
export type DashboardSuggestion = {
  readonly key: string;
  /** When it was computed (ISO); a cached answer is at most `DASHBOARD_LIMITS.suggestionTtlMs` old. */
  readonly computedAt: string;
} & (
  | {
      readonly status: 'suggested';
      /** Messages replayed. */
      readonly messages: number;
      readonly passSeconds: DashboardPassSeconds;
      readonly current: DashboardReplayOutcome;
      /** The keys to change and what they replay to; null when no setting reached 0 emergencies. */
      readonly suggested: {
        readonly values: Readonly<Record<string, number>>;
        readonly outcome: DashboardReplayOutcome;
      } | null;
      /** When none did: the fewest emergencies, and what a larger window or faster passes would do. */
      readonly closest: {
        readonly values: Readonly<Record<string, number>>;
        readonly outcome: DashboardReplayOutcome;
      } | null;
      readonly whatWould: readonly { readonly change: string; readonly outcome: DashboardReplayOutcome }[];
      /** `[channels."KEY".compaction]` with the changed keys, ready to paste; null when nothing changes. */
      readonly block: string | null;
      readonly search: DashboardSearchCost;
    }
  | { readonly status: 'too_little_history'; readonly messages: number; readonly neededMessages: number }
  | { readonly status: 'no_history' }
);

/** Where the dashboard's data comes from: the bot implements it on its stores. */
export interface DashboardSource {
  channels(): Promise<readonly DashboardChannelRow[]>;
  channel(key: string): Promise<DashboardChannelDetail | undefined>;
  history(key: string, page: HistoryPage): Promise<DashboardHistory | undefined>;
  usage(key: string): Promise<DashboardUsage | undefined>;
  /** The channel's suggested compaction settings; absent where the source cannot replay a channel. */
  suggestion?(key: string): Promise<DashboardSuggestion | undefined>;
  /** Subscribes to live events; returns the unsubscribe. */
  subscribe(listener: (event: DashboardEvent) => void): () => void;
}

export type HistoryPage =
  | { readonly kind: 'latest'; readonly limit: number }
  | { readonly kind: 'before'; readonly seq: number; readonly limit: number }
  | { readonly kind: 'after'; readonly seq: number; readonly limit: number };

export const DASHBOARD_LIMITS = {
  /** Messages per history page, by default and at most. */
  historyPage: 50,
  historyPageMax: 200,
  /** Characters of a message's text the history sends (a paste can be 40,000). */
  textChars: 2_000,
  /** Memories listed per channel. */
  memories: 20,
  /** The newest messages a suggestion replays, and how long one is served before it is computed again. */
  suggestionMessages: 20_000,
  suggestionTtlMs: 10 * 60_000,
} as const;
