/**
 * Codes every adapter may raise, spelt once here so no package invents its own spelling
 * (`slack_not_started`, `bad_channel_key`): the code list of each package that raises them starts
 * with these (the queue raises none of them).
 *
 * | code                  | when                                                        | retryable |
 * | --------------------- | ----------------------------------------------------------- | --------- |
 * | `not_started`         | a call before `start()` (or after `stop()`)                 | no        |
 * | `already_started`     | a second `start()`                                          | no        |
 * | `invalid_channel_key` | a channel key that is not this platform's (or any platform's) | no      |
 */
export const COMMON_ERROR_CODES = ['not_started', 'already_started', 'invalid_channel_key'] as const;
export type CommonErrorCode = (typeof COMMON_ERROR_CODES)[number];

/**
 * The core's own codes.
 *
 * | code                 | from                                                         | retryable |
 * | -------------------- | ------------------------------------------------------------ | --------- |
 * | `invariant_violated` | `InvariantError`: a bug in the compaction core               | no        |
 * | `pass_deferred`      | `PassDeferredError`: a follow-up pass waits for the one ahead | yes       |
 * | `timeout`            | `TimeoutError` from `withTimeout`                            | yes       |
 * | `taken_back`         | `TakenBackError`: a pass read text a take-back has since covered | yes   |
 */
export const CORE_ERROR_CODES = [
  ...COMMON_ERROR_CODES,
  'invariant_violated',
  'pass_deferred',
  'timeout',
  'taken_back',
  'channel_lease_lost',
] as const;
export type CoreErrorCode = (typeof CORE_ERROR_CODES)[number];

/**
 * The one error type Ebb throws. `code` is stable for callers and logs; `retryable` tells a job
 * runner whether trying again can help. Foreign errors (openai, pg, ioredis) are mapped to this at
 * the adapter edge and kept as `cause`.
 *
 * `C` is the closed union of the throwing package's codes. Each package throws through its own
 * subclass (`SlackError`, `DbError`, `LlmError`, …) fixed to its union, so a misspelt code does not
 * compile; `EbbError` itself (code: `string`) is what a catch site tests for.
 */
export class EbbError<C extends string = string> extends Error {
  readonly code: C;
  readonly retryable: boolean;

  constructor(message: string, options: EbbErrorOptions<C>) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.retryable = options.retryable ?? false;
  }
}

/**
 * Whether trying the same call again may help: false only when the error says so (`retryable ===
 * false`, as an `EbbError` does unless it says otherwise); a foreign error without the flag (a
 * socket reset) may pass. The job runners and the usage store that keeps what Postgres refused
 * decide by it.
 */
export function isRetryable(err: unknown): boolean {
  return !(typeof err === 'object' && err !== null && (err as { retryable?: unknown }).retryable === false);
}

export interface EbbErrorOptions<C extends string = string> {
  readonly code: C;
  /** Whether the same call may succeed later; false unless said. */
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

/**
 * What an adapter edge knows when a foreign error reaches it. Every package that maps a foreign
 * client's errors (pg in `db`, `@slack/web-api` in `slack`, discord.js in `discord`) exports one
 * `toEbbError(err, { doing, code })` with this context, and returns an `EbbError` it is given as is.
 */
export interface ErrorContext<C extends string> {
  /** What Ebb was doing, for the message: `chat.postMessage`, `post to discord:1:2`, `append`. */
  readonly doing: string;
  /** The code to give the error, instead of the one the edge would pick from the foreign error. */
  readonly code?: C;
}

/** Errors the core raises itself. */
export class CoreError extends EbbError<CoreErrorCode> {}

/** A broken invariant of the compaction core: a bug, never user input. */
export class InvariantError extends CoreError {
  constructor(message: string) {
    super(message, { code: 'invariant_violated' });
  }
}

/**
 * A follow-up pass finished before the pass ahead of it spliced: its summary is checkpointed, and
 * the job driver runs it again after `retryAfterMs` without spending an attempt.
 */
export class PassDeferredError extends CoreError {
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number) {
    super(message, { code: 'pass_deferred', retryable: true });
    this.retryAfterMs = retryAfterMs;
  }
}
