/**
 * Faults a test scripts into the fake Web API, taken in the order they were scripted, one per call
 * of the method until each has been answered `times` times:
 *
 * - `error`: HTTP 200 `{ ok: false, error }`, how Slack refuses a call (`missing_scope`, ...).
 * - `rate_limit`: HTTP 429 with `Retry-After: <whole seconds>` and `{ ok: false, error: 'ratelimited' }`,
 *   as Slack answers a method called over its tier's limit. `WebClient` reads only the header
 *   (`parseInt`), sleeps that long with its request queue paused, then retries within its
 *   `retryConfig`; with `rejectRateLimitedCalls` it throws `slack_webapi_rate_limited_error` at once.
 */
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

interface Scripted {
  readonly method: string;
  readonly fault: WebApiFault;
  remaining: number;
}

export class WebApiFaults {
  #scripted: Scripted[] = [];

  /** `times` may be `Infinity`: every call of `method` from now on. */
  add(method: string, fault: WebApiFault, times: number): void {
    if (!(times >= 1)) throw new Error(`FakeSlack: a fault needs times >= 1, got ${times}`);
    if (fault.kind === 'rate_limit') {
      const seconds = fault.retryAfterSeconds;
      // Slack sends whole seconds; WebClient parseInt()s the header, so 0.5 would read as 0.
      if (!Number.isInteger(seconds) || seconds < 0) {
        throw new Error(`FakeSlack: retryAfterSeconds must be a whole number >= 0, got ${seconds}`);
      }
    }
    this.#scripted.push({ method, fault, remaining: times });
  }

  /** The answer for the oldest fault scripted for `method`, used up once; undefined when none is left. */
  take(method: string): WebApiFaultAnswer | undefined {
    const scripted = this.#scripted.find((s) => s.method === method);
    if (!scripted) return undefined;
    scripted.remaining--;
    if (scripted.remaining <= 0) this.#scripted = this.#scripted.filter((s) => s !== scripted);
    return faultAnswer(scripted.fault);
  }
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
