/**
 * Faults a test scripts into the fake Web API, as `ScriptedFaults` (`../scripted-faults.ts`) takes
 * them: in the order they were scripted, one per call of the method until each has been answered
 * `times` times:
 *
 * - `error`: HTTP 200 `{ ok: false, error }`, how Slack refuses a call (`missing_scope`, ...).
 * - `rate_limit`: HTTP 429 with `Retry-After: <whole seconds>` and `{ ok: false, error: 'ratelimited' }`,
 *   as Slack answers a method called over its tier's limit. `WebClient` reads only the header
 *   (`parseInt`), sleeps that long with its request queue paused, then retries within its
 *   `retryConfig`; with `rejectRateLimitedCalls` it throws `slack_webapi_rate_limited_error` at once.
 */
import type { FaultScript } from '../scripted-faults.js';
import type { WebApiBody } from './web-api.js';

export type WebApiFault =
  | { readonly kind: 'error'; readonly error: string }
  | { readonly kind: 'rate_limit'; readonly retryAfterSeconds: number };

/** What the fake sends instead of calling the method. */
export interface WebApiFaultAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: WebApiBody;
}

/** `fault` for the next `times` calls of `method` (`times` may be `Infinity`: every call from now on). */
export function webApiFaultScript(
  method: string,
  fault: WebApiFault,
  times: number,
): FaultScript<string, WebApiFaultAnswer> {
  if (fault.kind === 'rate_limit') {
    const seconds = fault.retryAfterSeconds;
    // Slack sends whole seconds; WebClient parseInt()s the header, so 0.5 would read as 0.
    if (!Number.isInteger(seconds) || seconds < 0) {
      throw new Error(`FakeSlack: retryAfterSeconds must be a whole number >= 0, got ${seconds}`);
    }
  }
  return { matches: (called) => called === method, answer: () => faultAnswer(fault), times };
}

export function faultAnswer(fault: WebApiFault): WebApiFaultAnswer {
  switch (fault.kind) {
    case 'error':
      return { status: 200, headers: {}, body: { ok: false, error: fault.error } };
    case 'rate_limit':
      return {
        status: 429,
        headers: { 'retry-after': String(fault.retryAfterSeconds) },
        body: { ok: false, error: 'ratelimited' },
      };
    default: {
      const exhaustive: never = fault;
      throw new Error(`FakeSlack: unknown fault ${JSON.stringify(exhaustive)}`);
    }
  }
}
