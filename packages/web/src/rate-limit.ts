/**
 * Per-client rate limits: a token bucket per client address that holds `burst` requests and refills
 * at `perMinute`. The web channel API counts every request; `accessControl` counts refused
 * credentials on every route (see `access.ts`). A request that finds the bucket empty is answered
 * `429 rate_limited` with `Retry-After` (whole seconds until a request is allowed again).
 *
 * The client is `clientAddress` (`client-address.ts`): behind a reverse proxy on this host, the
 * address the proxy saw. The buckets live in a bounded LRU: an address that has been quiet long
 * enough to refill completely is forgotten anyway.
 */
import { LruMap } from '@ebb/core';
import type { Context, MiddlewareHandler } from 'hono';
import { clientAddress } from './client-address.js';
import { webError } from './errors.js';

export interface RateLimitOptions {
  /** Sustained requests per minute per client; 0 turns the limit off. */
  readonly perMinute: number;
  /** Requests a client may make at once. */
  readonly burst: number;
  /** How many clients are tracked at once (the least recently seen are dropped first). */
  readonly maxClients?: number;
  /** Tests: milliseconds now. */
  readonly now?: () => number;
}

export const DEFAULT_RATE_LIMIT = {
  perMinute: 120,
  burst: 60,
  maxClients: 10_000,
  now: Date.now,
} as const satisfies Required<RateLimitOptions>;

interface Bucket {
  tokens: number;
  at: number;
}

/** What a bucket decides for one request. */
export type RateDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterMs: number };

export class RateLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #now: () => number;
  readonly #buckets: LruMap<string, Bucket>;

  constructor(options: RateLimitOptions) {
    this.#perMs = options.perMinute / 60_000;
    this.#burst = options.burst;
    this.#now = options.now ?? DEFAULT_RATE_LIMIT.now;
    this.#buckets = new LruMap(options.maxClients ?? DEFAULT_RATE_LIMIT.maxClients);
  }

  /** Takes one request from the client's bucket, or says how long until it may try again. */
  take(client: string): RateDecision {
    if (this.#perMs === 0) return { allowed: true };
    const now = this.#now();
    const bucket = this.#buckets.getOrSet(client, () => ({ tokens: this.#burst, at: now }));
    bucket.tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.at) * this.#perMs);
    bucket.at = now;
    if (bucket.tokens < 1)
      return { allowed: false, retryAfterMs: Math.ceil((1 - bucket.tokens) / this.#perMs) };
    bucket.tokens -= 1;
    return { allowed: true };
  }

  /** What `take` would decide now, without taking a request from the bucket. */
  peek(client: string): RateDecision {
    const bucket = this.#buckets.get(client);
    if (this.#perMs === 0 || bucket === undefined) return { allowed: true };
    const tokens = Math.min(this.#burst, bucket.tokens + (this.#now() - bucket.at) * this.#perMs);
    return tokens < 1
      ? { allowed: false, retryAfterMs: Math.ceil((1 - tokens) / this.#perMs) }
      : { allowed: true };
  }
}

export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  const limiter = new RateLimiter(options);
  return async (c, next) => {
    const decision = limiter.take(clientAddress(c));
    return decision.allowed ? next() : rateLimited(c, decision.retryAfterMs);
  };
}

/** The `429 rate_limited` answer, with `Retry-After` in whole seconds. */
export function rateLimited(c: Context, retryAfterMs: number): Response {
  c.header('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  return webError(c, 429, 'rate_limited', 'too many requests from this client; wait for Retry-After seconds');
}
