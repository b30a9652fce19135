import type { LlmCall } from './ports.js';

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

/**
 * The summarizer gave up on a pass instead of writing the extractive fallback: the provider failed
 * in a way that can pass and the channel can wait (`SummarizeInput.canWait`), or the provider
 * refused us (a bad key, no quota), which a fallback would hide. `code` and `retryable` are the
 * provider error's; `calls` are the model calls made on the way (metrics count them);
 * `retryAfterMs` is the wait the provider asked for (a rate limit): the job driver puts the job
 * back for that long without spending an attempt.
 */
export class SummarizerGaveUpError extends EbbError {
  readonly calls: readonly LlmCall[];
  readonly retryAfterMs: number | undefined;

  constructor(cause: EbbError & { readonly retryAfterMs?: number | undefined }, calls: readonly LlmCall[]) {
    super(`the summarizer gave up: ${cause.message}`, {
      code: cause.code,
      retryable: cause.retryable,
      cause,
    });
    this.calls = calls;
    this.retryAfterMs = cause.retryAfterMs;
  }
}
