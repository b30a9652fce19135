/**
 * OpenAI errors mapped to `LlmError` at the edge, so nothing past this package knows the client's
 * error classes. `retryable` says whether the same request may succeed later; `retryAfterMs` is the
 * wait the provider asked for (429 `retry-after-ms` / `Retry-After`).
 *
 * | code                    | from                                               | retryable |
 * | ----------------------- | -------------------------------------------------- | --------- |
 * | `llm_rate_limited`      | 429 (not `insufficient_quota`)                     | yes       |
 * | `llm_quota_exceeded`    | 429 `insufficient_quota`: out of credit            | no        |
 * | `llm_context_overflow`  | 400 `context_length_exceeded`: split the input     | no        |
 * | `llm_auth`              | 401, 403                                           | no        |
 * | `llm_timeout`           | client timeout, 408                                | yes       |
 * | `llm_connection`        | connection refused or reset                        | yes       |
 * | `llm_server`            | 5xx, 409                                           | yes       |
 * | `llm_malformed_output`  | a body or content that is not what was asked for  | yes       |
 * | `llm_unsupported_parameter` | 400 naming a parameter the server refuses (`param`) | no    |
 * | `llm_output_exhausted`  | cut off at the output limit before writing any text | no       |
 * | `llm_bad_request`       | other 4xx                                          | no        |
 * | `llm_aborted`           | the caller's signal                                | no        |
 * | `llm_unexpected`        | anything else                                      | no        |
 */
import { EbbError, errorText } from '@ebb/core';
import OpenAI from 'openai';

export const LLM_ERROR_CODES = [
  'llm_rate_limited',
  'llm_quota_exceeded',
  'llm_context_overflow',
  'llm_auth',
  'llm_timeout',
  'llm_connection',
  'llm_server',
  'llm_malformed_output',
  'llm_unsupported_parameter',
  'llm_output_exhausted',
  'llm_bad_request',
  'llm_aborted',
  'llm_unexpected',
] as const;
export type LlmErrorCode = (typeof LLM_ERROR_CODES)[number];

/**
 * The provider refuses us until an operator acts (a rejected key, no credit): never hidden behind
 * an extractive fallback; the pass fails, loudly.
 */
export const LLM_REFUSALS: ReadonlySet<LlmErrorCode> = new Set(['llm_auth', 'llm_quota_exceeded']);

/** Whether an error code, as logged or recorded on a run, is a refusal (`LLM_REFUSALS`). */
export function isLlmRefusal(code: string | null | undefined): boolean {
  return (LLM_REFUSALS as ReadonlySet<string | null | undefined>).has(code);
}

/**
 * The provider is busy or away for now (a rate limit, an outage, a timeout): worth waiting for
 * when the work can wait. Not a model that answers garbage (`llm_malformed_output`): that rarely
 * mends later, so such a pass lands on the fallback at once.
 */
export const LLM_UNAVAILABLE: ReadonlySet<LlmErrorCode> = new Set([
  'llm_rate_limited',
  'llm_server',
  'llm_connection',
  'llm_timeout',
]);

export interface LlmErrorOptions {
  readonly code: LlmErrorCode;
  readonly retryable: boolean;
  readonly cause?: unknown;
  /** HTTP status, when the provider answered. */
  readonly status?: number;
  /** How long the provider asked us to wait before trying again. */
  readonly retryAfterMs?: number;
  /** The request parameter the server refused (`llm_unsupported_parameter`). */
  readonly param?: string;
  /** The code of every failed try of the call, this one last (retries hide the others). */
  readonly failedTries?: readonly LlmErrorCode[];
}

export class LlmError extends EbbError<LlmErrorCode> {
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly param: string | undefined;
  readonly failedTries: readonly LlmErrorCode[] | undefined;
  readonly #options: LlmErrorOptions;

  constructor(message: string, options: LlmErrorOptions) {
    super(message, { code: options.code, retryable: options.retryable, cause: options.cause });
    this.#options = options;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.param = options.param;
    this.failedTries = options.failedTries;
  }

  /** This error as the last of a call's failed tries, `failures` (this one included). */
  afterTries(failures: readonly LlmErrorCode[]): LlmError {
    return new LlmError(this.message, { ...this.#options, failedTries: failures });
  }
}

export function isLlmError(error: unknown, code?: LlmErrorCode): error is LlmError {
  return error instanceof LlmError && (code === undefined || error.code === code);
}

/**
 * Maps whatever a client call threw to an `LlmError` (an `LlmError` is returned as is). `now` is
 * for `Retry-After` given as an HTTP date.
 */
export function toLlmError(error: unknown, now: () => number = Date.now): LlmError {
  if (error instanceof LlmError) return error;
  // Abort before the connection errors: the client throws APIUserAbortError on the caller's signal.
  if (error instanceof OpenAI.APIUserAbortError) {
    return new LlmError('the LLM request was aborted', {
      code: 'llm_aborted',
      retryable: false,
      cause: error,
    });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) {
    return new LlmError('the LLM request timed out', { code: 'llm_timeout', retryable: true, cause: error });
  }
  if (error instanceof OpenAI.APIConnectionError) {
    return new LlmError(`could not reach the LLM: ${error.message}`, {
      code: 'llm_connection',
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined)
    return fromStatus(error, error.status, now);
  if (error instanceof SyntaxError) {
    // The client parses a JSON-labelled body with response.json(); a garbled body lands here.
    return new LlmError(`the LLM answered with a body that is not JSON: ${error.message}`, {
      code: 'llm_malformed_output',
      retryable: true,
      cause: error,
    });
  }
  if (error instanceof OpenAI.OpenAIError) {
    return new LlmError(error.message, { code: 'llm_unexpected', retryable: false, cause: error });
  }
  return new LlmError(`unexpected LLM failure: ${errorText(error)}`, {
    code: 'llm_unexpected',
    retryable: false,
    cause: error,
  });
}

function fromStatus(
  error: InstanceType<typeof OpenAI.APIError>,
  status: number,
  now: () => number,
): LlmError {
  const base = { cause: error, status };
  const code = typeof error.code === 'string' ? error.code : undefined;
  if (status === 429) {
    if (code === 'insufficient_quota') {
      return new LlmError(error.message, { ...base, code: 'llm_quota_exceeded', retryable: false });
    }
    const retryAfterMs = parseRetryAfter(error.headers, now);
    return new LlmError(error.message, {
      ...base,
      code: 'llm_rate_limited',
      retryable: true,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  if (
    status === 400 &&
    (code === 'context_length_exceeded' || /maximum context length/i.test(error.message))
  ) {
    return new LlmError(error.message, { ...base, code: 'llm_context_overflow', retryable: false });
  }
  const param = status === 400 ? refusedParameter(error) : undefined;
  if (param !== undefined) {
    return new LlmError(error.message, {
      ...base,
      code: 'llm_unsupported_parameter',
      retryable: false,
      param,
    });
  }
  if (status === 401 || status === 403) {
    return new LlmError(error.message, { ...base, code: 'llm_auth', retryable: false });
  }
  if (status === 408) return new LlmError(error.message, { ...base, code: 'llm_timeout', retryable: true });
  if (status === 409 || status >= 500) {
    return new LlmError(error.message, { ...base, code: 'llm_server', retryable: true });
  }
  return new LlmError(error.message, { ...base, code: 'llm_bad_request', retryable: false });
}

/**
 * The optional parameters Ebb may send that some server refuses (`request-dialect.ts` renames or
 * drops them): the only names a refusal is recognised for.
 */
export const OPTIONAL_PARAMETERS = [
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'reasoning_effort',
  'prompt_cache_key',
  'prompt_cache_retention',
] as const;
export type OptionalParameter = (typeof OPTIONAL_PARAMETERS)[number];

/**
 * The parameter a 400 refuses, as servers say it: OpenAI names it in `param` with code
 * `unsupported_parameter` or `unsupported_value`; older servers and gateways only in the message
 * ("Unrecognized request argument supplied: max_completion_tokens", LiteLLM's "does not support
 * parameters: ['reasoning_effort']", "extra inputs are not permitted").
 */
function refusedParameter(error: InstanceType<typeof OpenAI.APIError>): OptionalParameter | undefined {
  const named = (OPTIONAL_PARAMETERS as readonly string[]).find((name) => name === error.param);
  if (named !== undefined && (error.code === 'unsupported_parameter' || error.code === 'unsupported_value')) {
    return named as OptionalParameter;
  }
  if (
    !/unrecogni[sz]ed|unsupported|not supported|does not support|unknown|not permitted|not allowed/i.test(
      error.message,
    )
  ) {
    return undefined;
  }
  // The name the message mentions first: "'max_tokens' is not supported … use 'max_completion_tokens'".
  let first: { name: OptionalParameter; at: number } | undefined;
  for (const name of OPTIONAL_PARAMETERS) {
    const at = error.message.search(new RegExp(`(?<![a-z_])${name}(?![a-z_])`));
    if (at >= 0 && (first === undefined || at < first.at)) first = { name, at };
  }
  return first?.name;
}

/** `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date. */
export function parseRetryAfter(
  headers: Headers | undefined,
  now: () => number = Date.now,
): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now());
}
