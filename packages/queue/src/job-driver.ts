/**
 * What both job drivers (the BullMQ worker and the in-process queue) run and report: the processor
 * signature, the events a caller logs, and how a failure is classified (retry or give up).
 */
import { SummarizerGaveUpError, type Tier } from '@ebb/core';
import type { CompactionJobPayload } from './compaction-jobs.js';

/** A validated payload plus where it stands in its job's life. */
export type CompactionJobContext = CompactionJobPayload & {
  readonly jobId: string;
  /** 1 on the first try; a stalled job picked up again keeps its number. */
  readonly attempt: number;
  /** No attempt follows this one if it fails: the pass should land now, on a fallback if need be. */
  readonly lastAttempt: boolean;
};

/**
 * Runs one compaction pass. Resolve to complete the job. Throw to fail the attempt: an error with
 * `retryable === false` (an `EbbError` unless it says otherwise) ends the job at once; anything
 * else is retried with backoff until the attempts run out. `signal` aborts when the driver shuts
 * down past its grace period or the job is cancelled.
 */
export type CompactionProcessor = (job: CompactionJobContext, signal: AbortSignal) => Promise<unknown>;

export interface CompactionCompletedEvent {
  readonly jobId: string;
  readonly channelKey: string;
  readonly tier: Tier;
  readonly attempt: number;
  readonly result: unknown;
}

export interface CompactionFailedEvent {
  readonly jobId: string;
  /** Missing when the payload itself was bad. */
  readonly channelKey?: string;
  readonly tier?: Tier;
  readonly attempt: number;
  readonly error: Error;
  /** True when another attempt follows (after the backoff). */
  readonly willRetry: boolean;
}

export interface CompactionStalledEvent {
  readonly jobId: string;
}

/** Events of a compaction driver, for `EventEmitter<CompactionEvents>`. */
export interface CompactionEvents {
  completed: [event: CompactionCompletedEvent];
  failed: [event: CompactionFailedEvent];
  stalled: [event: CompactionStalledEvent];
}

/**
 * The wait an error asks for when the provider said how long to wait (a rate limit, through
 * `SummarizerGaveUpError.retryAfterMs`). Both drivers then put the job back for that long without
 * spending an attempt: the provider is busy, the pass is not failing.
 */
export function providerWaitMs(err: unknown): number | undefined {
  if (!(err instanceof SummarizerGaveUpError) || err.retryAfterMs === undefined) return undefined;
  return Number.isFinite(err.retryAfterMs) && err.retryAfterMs > 0 ? err.retryAfterMs : undefined;
}

export function toError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
