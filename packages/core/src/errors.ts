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
