/**
 * Per-client rate limits: a token bucket per client address that holds `burst` requests and refills
 * at `perMinute`. The web channel API counts every request; `accessControl` counts refused
 * credentials on every route (see `access.ts`). A request that finds the bucket empty is answered
 * `429 rate_limited` with `Retry-After` (whole seconds until a request is allowed again).
 *
 * The client is `clientAddress` (`client-address.ts`): behind a reverse proxy on this host, the
 * address the proxy saw. The buckets live in a bounded LRU: an address that has been quiet long
 * enough to refill completely is forgotten anyway.
 *
 * A client that meets a limit is logged as a `web.rate_limited` warning naming it and the limit, at
 * most once per client a minute however many requests are refused, so a flood cannot flood the log.
 * Loopback clients are limited too (a local script is a client like any other); the bot's
 * `[web] rate_limit_per_minute` and `rate_limit_burst` set the limits.
 */
import { type Logger, LruMap, SILENT_LOGGER } from '@ebb/core';
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

/** Which limit a client met: every request to the channel API, or refused credentials on any route. */
export type RateLimitKind = 'api_requests' | 'refused_credentials';

/** How often one client's `web.rate_limited` warning may be logged. */
const WARNING_WINDOW_MS = 60_000;

/** Logs `web.rate_limited` for a client that met a limit: once per client per minute window. */
export class RateLimitWarnings {
  readonly #logger: Logger;
  readonly #limits: RateLimitOptions;
  readonly #kind: RateLimitKind;
  readonly #now: () => number;
  /** When each client was last logged. */
  readonly #loggedAt: LruMap<string, number>;

  constructor(logger: Logger, limits: RateLimitOptions, kind: RateLimitKind) {
    this.#logger = logger;
    this.#limits = limits;
    this.#kind = kind;
    this.#now = limits.now ?? DEFAULT_RATE_LIMIT.now;
    this.#loggedAt = new LruMap(limits.maxClients ?? DEFAULT_RATE_LIMIT.maxClients);
  }

  /** A request of `client` was answered 429. */
  refused(client: string, retryAfterMs: number): void {
    const now = this.#now();
    const last = this.#loggedAt.get(client);
    if (last !== undefined && now - last < WARNING_WINDOW_MS) return;
    this.#loggedAt.set(client, now);
    const { perMinute, burst } = this.#limits;
    const what =
      this.#kind === 'api_requests'
        ? `sent more requests to the web channel API than its limit (${burst} at once, ${perMinute} a minute)`
        : `had more requests refused for a wrong or missing token than its limit (${burst} at once, ${perMinute} a minute)`;
    this.#logger.warn(
      { event: 'web.rate_limited', client, limit: this.#kind, perMinute, burst, retryAfterMs },
      `${client} ${what}: it is answered 429 until it slows down (logged once a minute per client; [web] rate_limit_burst and rate_limit_per_minute raise the limit, 0 a minute turns it off)`,
    );
  }
}

/** The channel API's limit: every request counts. `logger` hears of clients that meet it. */
export function rateLimit(options: RateLimitOptions, logger: Logger = SILENT_LOGGER): MiddlewareHandler {
  const limiter = new RateLimiter(options);
  const warnings = new RateLimitWarnings(logger, options, 'api_requests');
  return async (c, next) => {
    const client = clientAddress(c);
    const decision = limiter.take(client);
    if (decision.allowed) return next();
    warnings.refused(client, decision.retryAfterMs);
    return rateLimited(c, decision.retryAfterMs);
  };
}

/** The `429 rate_limited` answer, with `Retry-After` in whole seconds. */
export function rateLimited(c: Context, retryAfterMs: number): Response {
  c.header('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  return webError(c, 429, 'rate_limited', 'too many requests from this client; wait for Retry-After seconds');
}
