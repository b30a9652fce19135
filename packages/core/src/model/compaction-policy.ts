/**
 * The knobs that steer compaction for one channel, after config resolution. Values are plain
 * numbers so the core stays free of any config format; `@ebb/config` builds this from TOML.
 */
export interface CompactionPolicy {
  /**
   * Usage (0..1) at which a background pass is enqueued: `background_threshold`, or lower when
   * `workingTokens` is reached first.
   */
  readonly backgroundThreshold: number;
  /**
   * `[compaction] working_tokens`, when it sets `backgroundThreshold` (it comes before
   * `background_threshold` in this window).
   */
  readonly workingTokens?: number;
  /** Usage at which an aggressive pass is enqueued. */
  readonly aggressiveThreshold: number;
  /** Usage at which the bot truncates synchronously. */
  readonly emergencyThreshold: number;
  /**
   * Share of the context, by tokens, that a background pass summarizes: `working_fraction` when
   * `workingTokens` sets the threshold, else `background_fraction`.
   */
  readonly backgroundFraction: number;
  /** Share of the context that an aggressive pass summarizes. */
  readonly aggressiveFraction: number;
  /** Share of the context that an emergency truncation drops. */
  readonly emergencyFraction: number;
  /** The newest messages that no pass or truncation ever touches. */
  readonly protectRecent: number;
  /** Upper bound on the tokens of one summary. */
  readonly summaryMaxTokens: number;
  /** A background pass waits this long after the channel's last pass landed (see `decideAfterTurn`). */
  readonly cooldownMs: number;
  /** After this many landings in a row that freed little (see `CompactionMonitor.shrunk`), stop enqueueing. */
  readonly maxIneffectivePasses: number;
  /** One message above this many tokens enters the context clipped to head + tail. */
  readonly messageMaxTokens: number;
  /** Whether old tool results are stubbed (microcompaction, the tier below background). */
  readonly microcompaction: boolean;
  /** Usage at which old tool results are stubbed (or `backgroundThreshold`, when that is lower). */
  readonly microcompactThreshold: number;
  /** The newest tool results of the context that are never stubbed. */
  readonly keepToolResults: number;
  /** Tool results below this many tokens are never stubbed. */
  readonly microcompactMinTokens: number;
}

/** The model-side numbers the budget is computed from. */
export interface ModelBudget {
  readonly contextWindow: number;
  /** Tokens kept free for the reply. */
  readonly maxOutputTokens: number;
}

export const DEFAULT_SUMMARY_MAX_TOKENS = 4096;
export const DEFAULT_SUMMARY_WINDOW_SHARE = 0.08;
export const DEFAULT_MESSAGE_WINDOW_SHARE = 0.25;
export const DEFAULT_SUMMARY_WORKING_SHARE = 0.1;

/**
 * Default summary budget: min(4,096, 8% of the window, 10% of the working size when there is one).
 * A pass writes its whole summary again each time it folds the last one, so a summary that is a
 * third of a 12,000-token working context made the summarizer's output (at six times the input
 * price) cost more than the reply prompts it saved; at a tenth, a pass costs what it did at the
 * window's edge (BENCHMARKS.md, "The working size").
 */
export function defaultSummaryMaxTokens(contextWindow: number, workingTokens = 0): number {
  const byWindow = Math.min(
    DEFAULT_SUMMARY_MAX_TOKENS,
    Math.floor(contextWindow * DEFAULT_SUMMARY_WINDOW_SHARE),
  );
  return workingTokens > 0
    ? Math.min(byWindow, Math.floor(workingTokens * DEFAULT_SUMMARY_WORKING_SHARE))
    : byWindow;
}

/** Default per-message cap: 25% of the window. */
export function defaultMessageMaxTokens(contextWindow: number): number {
  return Math.floor(contextWindow * DEFAULT_MESSAGE_WINDOW_SHARE);
}
