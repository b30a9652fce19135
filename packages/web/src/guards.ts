/**
 * The guards in front of every route of the bot's HTTP server, in the order they run: secure headers,
 * the channel API's per-client rate limit, the access rule (which also limits refused credentials)
 * and the body limit. WebAdapter mounts them; the web-guard benchmark mounts the same stack.
 */
import { type Logger, SILENT_LOGGER } from '@ebb/core';
import type { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { secureHeaders } from 'hono/secure-headers';
import { type AccessOptions, accessControl } from './access.js';
import { webError } from './errors.js';
import { DEFAULT_RATE_LIMIT, type RateLimitOptions, rateLimit } from './rate-limit.js';

export interface GuardOptions {
  /** Who may reach which route (tokens, `public_api`); see `access.ts`. Default: loopback only. */
  readonly access?: AccessOptions;
  /** Largest request body read, in bytes; larger ones get 413. */
  readonly maxBodyBytes?: number;
  /** Per-client limit on the channel API and on refused credentials (and, in tests, its clock). */
  readonly rateLimit?: RateLimitOptions;
  /** Where a client that meets a rate limit is told of (`web.rate_limited`). */
  readonly logger?: Logger;
}

export const DEFAULT_GUARDS = {
  access: {},
  maxBodyBytes: 256 * 1024,
  rateLimit: DEFAULT_RATE_LIMIT,
  logger: SILENT_LOGGER,
} as const satisfies Required<GuardOptions>;

/** Mounts the guards on `app`; call it before adding routes, so they run first. */
export function mountGuards(app: Hono, options: GuardOptions = {}): void {
  const limits = options.rateLimit ?? DEFAULT_GUARDS.rateLimit;
  // nosniff, no framing by other sites, no Referer (a `?token=` address must not leak), and so on.
  app.use('*', secureHeaders());
  // Every request to the channel API is counted; accessControl counts refused credentials on every
  // route (the same limits, a bucket of their own), so guessing a token is limited everywhere while
  // a dashboard polling with its session is not.
  const logger = options.logger ?? DEFAULT_GUARDS.logger;
  app.use('/api/channels/*', rateLimit(limits, logger));
  app.use('*', accessControl({ refusals: limits, logger, ...(options.access ?? DEFAULT_GUARDS.access) }));
  const maxBytes = options.maxBodyBytes ?? DEFAULT_GUARDS.maxBodyBytes;
  app.use(
    '*',
    bodyLimit({
      maxSize: maxBytes,
      onError: (c) => {
        // The client may still be sending: end the connection rather than read the rest.
        c.header('Connection', 'close');
        return webError(c, 413, 'body_too_large', `the request body is larger than ${maxBytes} bytes`);
      },
    }),
  );
}
