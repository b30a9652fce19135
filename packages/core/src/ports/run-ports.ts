/** The record of every compaction pass: its range, state, checkpoint and outcome. */
import type { SeqRange, Tier } from '../model/model.js';
import type { SummaryOutput } from './model-ports.js';

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

/**
 * How many of a channel's latest runs a look back over its passes reads: for the passes still in
 * flight, the circuit breaker's tries, the dashboard's chart and the suggestion's pass durations.
 * Far more than a channel runs at once (two passes) or in a breaker's window.
 */
export const RUNS_LOOKBACK = 50;
