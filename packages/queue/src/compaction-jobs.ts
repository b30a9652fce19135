/**
 * The compaction job catalog: the queue, its one job name, the payload schema, the job id scheme and
 * the default job options. Producers (`BullmqCompactionQueue`, `InlineCompactionQueue`) and the
 * worker read everything about a compaction job from here.
 *
 * A payload is a range and a generation, never message text: the worker reads the archive from
 * Postgres. Bad payloads fail `parseCompactionPayload` with `InvalidCompactionPayloadError`
 * (`retryable: false`); the worker turns that into BullMQ's `UnrecoverableError`.
 */
import type { CompactionJob, Tier } from '@ebb/core';
import { backoffDelayMs, MAX_FOCUS_CHARS, tierRank } from '@ebb/core';
import { z } from 'zod';
import { QueueError } from './errors.js';

/** The BullMQ queue every compaction job goes through. */
export const COMPACTION_QUEUE_NAME = 'compaction';

/** The one job name on that queue. */
export const COMPACTION_JOB_NAME = 'compact';

export const TIERS = ['background', 'aggressive', 'emergency'] as const satisfies readonly Tier[];

export const CompactionJobPayload = z
  .strictObject({
    channelKey: z.string().min(1).max(512),
    tier: z.enum(TIERS),
    fromSeq: z.int().min(1),
    toSeq: z.int().min(1),
    generation: z.int().min(0),
    /** A participant's text: bounded here too, as the bot and `ebb compact` check before enqueueing. */
    focus: z.string().max(MAX_FOCUS_CHARS).exactOptional(),
    /** A follow-up: the job id of the pass whose range ends right before this one's. */
    after: z.string().min(1).max(1024).exactOptional(),
    /**
     * The W3C trace context of the turn that queued it (`traceparent`, `tracestate`), so the pass's
     * span is that turn's child in the worker; absent with tracing off (`job-trace.ts`).
     */
    trace: z.record(z.string().max(64), z.string().max(1024)).exactOptional(),
  })
  .refine((p) => p.toSeq >= p.fromSeq, { message: 'toSeq must be >= fromSeq', path: ['toSeq'] });

export type CompactionJobPayload = z.infer<typeof CompactionJobPayload>;

/** A payload that does not match `CompactionJobPayload`; never worth a retry. */
export class InvalidCompactionPayloadError extends QueueError {
  /** The problems, one per line (`z.prettifyError`). */
  readonly issues: string;

  constructor(issues: string) {
    super(`invalid compaction job payload:\n${issues}`, { code: 'invalid_compaction_payload' });
    this.issues = issues;
  }
}

/** Validates a payload (as enqueued, or as read back from Redis) or throws `InvalidCompactionPayloadError`. */
export function parseCompactionPayload(data: unknown): CompactionJobPayload {
  const result = CompactionJobPayload.safeParse(data);
  if (!result.success) throw new InvalidCompactionPayloadError(z.prettifyError(result.error));
  return result.data;
}

/**
 * BullMQ priority of a tier (1 is served first), so a channel near its limit is not kept waiting
 * behind background passes of quieter channels.
 */
export function tierPriority(tier: Tier): number {
  return 3 - tierRank(tier);
}

/**
 * A channel key made safe for job ids, dedupe ids and Redis keys: percent-encoded, with `:` (which
 * BullMQ refuses in custom job ids) and `.` (the job id separator) encoded too. Readable for the
 * usual keys: `slack:T1:C1` → `slack%3AT1%3AC1`.
 */
export function encodeChannelKey(channelKey: string): string {
  return encodeURIComponent(channelKey).replaceAll('.', '%2E');
}

export function decodeChannelKey(encoded: string): string {
  return decodeURIComponent(encoded);
}

/**
 * The deterministic id of a compaction job:
 * `<encoded channel key>.<tier>.g<generation>.s<fromSeq>-<toSeq>`, e.g.
 * `slack%3AT1%3AC1.aggressive.g7.s1-340`. The same trigger (channel, tier, generation, range) gets
 * the same id, so splices and run records keyed on it are idempotent; it never contains `:` and is
 * never an integer, the two things BullMQ rejects. `focus` is not part of it.
 */
export function compactionJobId(job: CompactionJob): string {
  return `${encodeChannelKey(job.channelKey)}.${job.tier}.g${job.generation}.s${job.fromSeq}-${job.toSeq}`;
}

/** Retry and retention of a compaction job. Ages are in seconds (BullMQ's unit), delays in ms. */
export interface CompactionJobOptions {
  /** Tries in all, the first included. */
  readonly attempts: number;
  /** Exponential: the n-th retry waits `delay * 2^(n-1)` ms, less up to `jitter` of it at random. */
  readonly backoff: { readonly type: 'exponential'; readonly delay: number; readonly jitter: number };
  readonly removeOnComplete: { readonly age: number; readonly count: number };
  readonly removeOnFail: { readonly age: number; readonly count: number };
}

export const DEFAULT_COMPACTION_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2_000, jitter: 0.2 },
  removeOnComplete: { age: 24 * 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 24 * 3_600, count: 5_000 },
} as const satisfies CompactionJobOptions;

export function compactionJobOptions(overrides: Partial<CompactionJobOptions> = {}): CompactionJobOptions {
  return { ...DEFAULT_COMPACTION_JOB_OPTIONS, ...overrides };
}

/**
 * How long to wait before retrying after failed attempt `attempt` (1-based): BullMQ's exponential
 * strategy (uncapped), so the in-process driver retries on the same schedule as the worker. The
 * options stay in BullMQ's words (`delay`, `jitter`), since BullMQ reads them.
 */
export function retryDelayMs(
  backoff: CompactionJobOptions['backoff'],
  attempt: number,
  random: () => number = Math.random,
): number {
  const { delay, jitter } = backoff;
  return backoffDelayMs(
    { initialDelayMs: delay, maxDelayMs: Number.POSITIVE_INFINITY, jitter },
    attempt,
    random,
  );
}
