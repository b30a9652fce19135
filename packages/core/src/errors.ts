/**
 * The one error type Ebb throws. `code` is stable for callers and logs; `retryable` tells a job
 * runner whether trying again can help. Foreign errors (openai, pg, ioredis) are mapped to this at
 * the adapter edge and kept as `cause`.
 */
export class EbbError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(message: string, options: { code: string; retryable?: boolean; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.retryable = options.retryable ?? false;
  }
}

/** A broken invariant of the compaction core: a bug, never user input. */
export class InvariantError extends EbbError {
  constructor(message: string) {
    super(message, { code: 'invariant_violated' });
  }
}

/**
 * A follow-up pass finished before the pass ahead of it spliced: its summary is checkpointed, and
 * the job driver runs it again after `retryAfterMs` without spending an attempt.
 */
export class PassDeferredError extends EbbError {
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number) {
    super(message, { code: 'pass_deferred', retryable: true });
    this.retryAfterMs = retryAfterMs;
  }
}
