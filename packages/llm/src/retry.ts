/**
 * The one retry policy for LLM calls (the openai client's own retries are off: `maxRetries: 0`).
 * Exponential backoff with full jitter, never shorter than the provider's Retry-After; stops at once
 * on an error that is not retryable. The result says how many tries it took and how long it waited.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { backoffDelayMs } from '@ebb/core';
import { LlmError, type LlmErrorCode, toLlmError } from './errors.js';

export interface RetryOptions {
  /** Tries in all, the first included. */
  readonly attempts: number;
  /** The backoff ceiling of the first retry; it doubles with each retry (core's `Backoff`, full jitter). */
  readonly initialDelayMs: number;
  /** The backoff ceiling never grows past this (a longer Retry-After is still honoured). */
  readonly maxDelayMs: number;
  /**
   * Fewer tries for some errors (by default 3 for `llm_malformed_output`: a model that answers
   * garbage three times rarely mends on the fourth).
   */
  readonly maxAttemptsByCode?: Readonly<Partial<Record<LlmErrorCode, number>>>;
  /**
   * A Retry-After longer than this is not waited out: the call fails (still retryable), so the job
   * queue can reschedule it instead of a worker sleeping.
   */
  readonly maxRetryAfterMs?: number;
  /** Waits between tries; injected by tests. Resolves early when the signal aborts. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** 0 ≤ x < 1; injected by tests. */
  readonly random?: () => number;
}

export const DEFAULT_RETRY = {
  attempts: 4,
  initialDelayMs: 500,
  maxDelayMs: 15_000,
  maxAttemptsByCode: { llm_malformed_output: 3 },
  maxRetryAfterMs: 60_000,
  sleep: sleep,
  random: Math.random,
} as const satisfies Required<RetryOptions>;

export type RetryResult<T> = (
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      /** The mapped error of the last try. */
      readonly error: LlmError;
    }
) & {
  readonly attempts: number;
  readonly delaysMs: readonly number[];
  /** The code of each failed try, oldest first. */
  readonly failures: readonly LlmErrorCode[];
};

/**
 * Runs `fn` until it succeeds, fails with an error that is not retryable, or runs out of tries.
 * Errors are mapped with `toLlmError`; `fn` gets the 1-based try number. `beforeTry` runs before
 * every try (the first one included), outside the retry: what it throws is thrown as it is (a pass
 * whose text was taken back meanwhile sends nothing more).
 */
export async function withRetries<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
  signal?: AbortSignal,
  beforeTry?: () => Promise<void>,
): Promise<RetryResult<T>> {
  const sleepFor = options.sleep ?? DEFAULT_RETRY.sleep;
  const random = options.random ?? DEFAULT_RETRY.random;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_RETRY.maxRetryAfterMs;
  const maxAttemptsByCode: RetryOptions['maxAttemptsByCode'] =
    options.maxAttemptsByCode ?? DEFAULT_RETRY.maxAttemptsByCode;
  const delaysMs: number[] = [];
  const failures: LlmErrorCode[] = [];
  const triesByCode = new Map<LlmErrorCode, number>();
  for (let attempt = 1; ; attempt++) {
    await beforeTry?.();
    try {
      const value = await fn(attempt);
      return { ok: true, value, attempts: attempt, delaysMs, failures };
    } catch (thrown) {
      const error = signal?.aborted ? aborted(signal.reason) : toLlmError(thrown);
      failures.push(error.code);
      const tries = (triesByCode.get(error.code) ?? 0) + 1;
      triesByCode.set(error.code, tries);
      const limit = Math.min(options.attempts, maxAttemptsByCode[error.code] ?? options.attempts);
      const tooLong = (error.retryAfterMs ?? 0) > maxRetryAfterMs;
      if (!error.retryable || tries >= limit || attempt >= options.attempts || tooLong) {
        return { ok: false, error, attempts: attempt, delaysMs, failures };
      }
      const wait = retryDelayMs(attempt, error, options, random);
      delaysMs.push(wait);
      await sleepFor(wait, signal);
      if (signal?.aborted)
        return { ok: false, error: aborted(signal.reason), attempts: attempt, delaysMs, failures };
    }
  }
}

/**
 * The wait after failed try `attempt` (1-based): full jitter over an exponentially growing ceiling,
 * or the provider's Retry-After when that is longer.
 */
export function retryDelayMs(
  attempt: number,
  error: { readonly retryAfterMs?: number | undefined },
  options: Pick<RetryOptions, 'initialDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  const { initialDelayMs, maxDelayMs } = options;
  const backoff = backoffDelayMs({ initialDelayMs, maxDelayMs, jitter: 1 }, attempt, random);
  return Math.max(backoff, Math.ceil(error.retryAfterMs ?? 0));
}

async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, signal ? { signal } : {});
  } catch {
    // Aborted: the caller checks its signal.
  }
}

function aborted(reason: unknown): LlmError {
  return new LlmError('the LLM request was aborted', {
    code: 'llm_aborted',
    retryable: false,
    cause: reason,
  });
}
