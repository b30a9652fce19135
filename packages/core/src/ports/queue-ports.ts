/** The queue the pipeline is written against (BullMQ or in-process), and the notifier bots reload on. */

import type { Tier } from '../model/model.js';

/** A compaction pass as a queue carries it: a range and a generation, never message text. */
export interface CompactionJob {
  readonly channelKey: string;
  readonly tier: Tier;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** The channel generation the range was planned at. */
  readonly generation: number;
  readonly focus?: string;
  /**
   * A follow-up: the job id of the pass whose range ends right before this one. This pass may run
   * at the same time, and splices only after that one landed (see `planSplice`'s `gap`).
   */
  readonly after?: string;
}

/** A pass of the channel as the queue reports it, oldest range first. */
export interface PassInFlight {
  readonly jobId: string;
  readonly tier: Tier;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** False while it waits (or is delayed); true once a worker has started it. */
  readonly running: boolean;
}

export interface EnqueueOptions {
  /** Run no sooner than this (the cooldown); the job counts as waiting meanwhile. */
  readonly delayMs?: number;
}

export type EnqueueOutcome =
  /** A new job. */
  | { readonly kind: 'enqueued'; readonly jobId: string }
  /** A waiting job of this channel of a lower tier, over an overlapping range, was replaced by this one. */
  | { readonly kind: 'escalated'; readonly jobId: string; readonly replacedJobId: string }
  /**
   * A job of this channel over an overlapping range is running, or waiting with the same or a higher
   * tier; or the channel has `MAX_PASSES_IN_FLIGHT` jobs already (see `admitPass`).
   */
  | { readonly kind: 'deduplicated'; readonly jobId: string };

/**
 * The compaction queue: at most `MAX_PASSES_IN_FLIGHT` jobs per channel over disjoint ranges, admitted
 * by `admitPass`. Implemented on BullMQ (`@ebb/queue`) and in process for embedded mode.
 */
export interface CompactionQueue {
  enqueue(job: CompactionJob, options?: EnqueueOptions): Promise<EnqueueOutcome>;
  /** The channel's jobs waiting or running, oldest range first. */
  inFlight(channelKey: string): Promise<readonly PassInFlight[]>;
  /** Where a job stands, by its id (for the reconciler: a run whose job is gone or failed). */
  jobState(jobId: string): Promise<JobState>;
  close(): Promise<void>;
}

/**
 * A job as the queue knows it: `pending` (waiting, delayed, prioritized), `active` (a worker holds
 * it; a lost lock is BullMQ's stalled check's business), `completed`, `failed` (for good), or
 * `missing` (never added, removed, or lost with Redis data).
 */
export type JobState = 'pending' | 'active' | 'completed' | 'failed' | 'missing';

/** Tells bots that a channel's context changed (a splice or truncation), so they reload it. */
export interface ContextNotifier {
  publish(change: { readonly channelKey: string; readonly generation: number }): Promise<void>;
  subscribe(
    listener: (change: { channelKey: string; generation: number }) => void,
  ): Promise<() => Promise<void>>;
}
