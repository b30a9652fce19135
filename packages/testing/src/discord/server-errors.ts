/**
 * Scripted 5xx answers for FakeDiscord's REST API: Discord (or Cloudflare in front of it) failing for
 * a while, as `{"message": "500: Internal Server Error", "code": 0}` with the status.
 *
 * What @discordjs/rest 2.x does with it: a 5xx is sent again at once, `retries` times (3 by default),
 * and then thrown as an `HTTPError`; so one call that fails takes `retries + 1` scripted answers.
 * It does not read the body.
 */
import type { FaultScript } from '../scripted-faults.js';
import type { RateLimitedRequest } from './rate-limits.js';
import { matchesRoute } from './route-pattern.js';
import { apiError } from './wire.js';

export interface ServerErrorScript {
  /** `POST`, `GET`, ...; any method when omitted. */
  readonly method?: string;
  /** A route pattern such as `channels/:id` (see `route-pattern.ts`), or a concrete route. */
  readonly route: string;
  /** How many requests in a row fail (1 by default); `Infinity` for every one from now on. */
  readonly times?: number;
  /** 500 to 599; 500 by default. */
  readonly status?: number;
}

/** What the fake sends instead of handling the request. */
export interface ServerErrorAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Record<string, unknown>;
}

const REASONS: Readonly<Record<number, string>> = {
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** `script` as a `ScriptedFaults` script: requests matching its method and route get its 5xx. */
export function serverErrorScript(
  script: ServerErrorScript,
): FaultScript<RateLimitedRequest, ServerErrorAnswer> {
  const status = script.status ?? 500;
  if (!Number.isInteger(status) || status < 500 || status > 599) {
    throw new Error(`FakeDiscord: a server error's status is 500 to 599, got ${status}`);
  }
  const answer: ServerErrorAnswer = {
    status,
    headers: {},
    body: apiError(0, `${status}: ${REASONS[status] ?? 'Server Error'}`),
  };
  return {
    matches: ({ method, parts }) =>
      (script.method === undefined || script.method.toUpperCase() === method) &&
      matchesRoute(script.route, parts),
    answer: () => answer,
    times: script.times ?? 1,
  };
}
