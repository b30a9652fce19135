/**
 * Scripted HTTP 429s for FakeDiscord's REST API, shaped as Discord sends them
 * (https://discord.com/developers/docs/topics/rate-limits):
 *
 *   429, Retry-After: 2 (whole seconds, rounded up), X-RateLimit-Limit: 5, X-RateLimit-Remaining: 0,
 *   X-RateLimit-Reset: <epoch seconds>, X-RateLimit-Reset-After: 1.5, X-RateLimit-Bucket: <hash>,
 *   X-RateLimit-Scope: user
 *   {"message":"You are being rate limited.","retry_after":1.5,"global":false}
 *
 * A global limit carries `X-RateLimit-Global: true` and scope `global`, and no bucket headers.
 *
 * What @discordjs/rest 2.x does with it: a per-route 429 with `Remaining: 0` marks the bucket
 * limited until `Reset-After` (plus its `offset`, 50 ms) and sends again; without `Remaining` it
 * sleeps `Retry-After` instead; `X-RateLimit-Global` blocks every route until `Retry-After`. A 429
 * never counts against `retries`, so it retries for as long as Discord keeps answering 429, unless
 * `rejectOnRateLimit` says to throw a `RateLimitError`.
 */
import { createHash } from 'node:crypto';
import type { FaultScript } from '../scripted-faults.js';
import { matchesRoute } from './route-pattern.js';

export type RateLimitScope = 'user' | 'shared' | 'global';

export interface RateLimitScript {
  /** `POST`, `GET`, ...; any method when omitted. */
  readonly method?: string;
  /** A route pattern such as `channels/:id/messages` (see `route-pattern.ts`). */
  readonly route: string;
  /** How many requests in a row are refused (1 by default); `Infinity` for every one from now on. */
  readonly times?: number;
  /** `retry_after` and `X-RateLimit-Reset-After`, in seconds (fractions allowed; 1 by default). */
  readonly retryAfterSeconds?: number;
  /** `user` (the default), `shared` (a per-resource limit) or `global` (every route). */
  readonly scope?: RateLimitScope;
  /** `X-RateLimit-Limit` (5 by default, the create-message bucket's size). */
  readonly limit?: number;
  /** `X-RateLimit-Bucket`; a hash of the method and route by default. */
  readonly bucket?: string;
}

/** What the fake sends instead of handling the request. */
export interface RateLimitAnswer {
  readonly status: 429;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: {
    readonly message: string;
    readonly retry_after: number;
    readonly global: boolean;
  };
}

/** A REST request as the rate limits see it. */
export interface RateLimitedRequest {
  /** Upper case. */
  readonly method: string;
  /** The route's segments (`routeParts`). */
  readonly parts: readonly string[];
  /** When it arrived, in epoch milliseconds. */
  readonly now: number;
}

/** `script` as a `ScriptedFaults` script: requests matching its method and route get its 429. */
export function rateLimitScript(script: RateLimitScript): FaultScript<RateLimitedRequest, RateLimitAnswer> {
  const seconds = script.retryAfterSeconds ?? 1;
  if (!(seconds >= 0) || !Number.isFinite(seconds)) {
    throw new Error(`FakeDiscord: retryAfterSeconds must be a finite number >= 0, got ${seconds}`);
  }
  return {
    matches: ({ method, parts }) =>
      (script.method === undefined || script.method.toUpperCase() === method) &&
      matchesRoute(script.route, parts),
    answer: ({ method, now }) => rateLimitAnswer(script, method, now),
    times: script.times ?? 1,
  };
}

export function rateLimitAnswer(script: RateLimitScript, method: string, now: number): RateLimitAnswer {
  const seconds = script.retryAfterSeconds ?? 1;
  const scope = script.scope ?? 'user';
  const headers: Record<string, string> = {
    'retry-after': String(Math.ceil(seconds)),
    'x-ratelimit-scope': scope,
  };
  if (scope === 'global') {
    headers['x-ratelimit-global'] = 'true';
  } else {
    headers['x-ratelimit-limit'] = String(script.limit ?? 5);
    headers['x-ratelimit-remaining'] = '0';
    headers['x-ratelimit-reset'] = ((now + seconds * 1000) / 1000).toFixed(3);
    headers['x-ratelimit-reset-after'] = seconds.toFixed(3);
    headers['x-ratelimit-bucket'] = script.bucket ?? bucketHash(method, script.route);
  }
  return {
    status: 429,
    headers,
    body: { message: 'You are being rate limited.', retry_after: seconds, global: scope === 'global' },
  };
}

function bucketHash(method: string, route: string): string {
  return createHash('sha256').update(`${method} ${route}`).digest('hex').slice(0, 32);
}
