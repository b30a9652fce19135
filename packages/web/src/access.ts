/**
 * Who may reach which route of the bot's HTTP server: one rule for every route but `/healthz`.
 *
 *   route                                   who is let in
 *   /healthz                                anyone (the orchestrator's probe; it carries no data)
 *   /metrics                                the admin credential, `Bearer <EBB_METRICS_TOKEN>`, or, when
 *                                           no metrics token is set, loopback clients
 *   /api/channels/* (the web channel API)   the admin credential, or anyone with `[web] public_api`,
 *                                           or, when no admin token is set, loopback clients
 *   everything else (dashboard, board)      the admin credential, or, when no admin token is set,
 *                                           loopback clients
 *
 * The admin credential is `Authorization: Bearer <EBB_ADMIN_TOKEN>` or the session cookie that opening
 * any page once with `?token=<EBB_ADMIN_TOKEN>` sets. The cookie is not the token: it is an expiry
 * signed with a key derived from the token (HMAC-SHA256), `HttpOnly`, `SameSite=Strict`, `Secure`
 * behind TLS, and it stops working when it expires or the token changes.
 *
 * "Loopback" means the connection comes from 127.0.0.0/8 or ::1 *and* carries no proxy header
 * (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`): a reverse proxy on the same host connects from
 * loopback too, and what it forwards is not local.
 *
 * A browser on this machine is a loopback client too, and it sends requests for every page it has
 * open. So loopback mode (no token for the route) also wants the request addressed to this machine by
 * name, `Host` localhost, 127.0.0.1 or [::1] with any port (`403 foreign_host`: a DNS-rebinding page
 * reaches 127.0.0.1 under its own name, and would read the answers), and a request that changes
 * something (POST, PUT, PATCH, DELETE) sent by no other site's page: an `Origin`, when there is one,
 * must be the request's own (`403 foreign_origin`; browsers send `Origin` on every cross-origin POST,
 * scripts such as curl send none). With a token none of this is needed: a page elsewhere has neither
 * the token nor the `SameSite=Strict` cookie.
 *
 * Guessing is slow: every refusal of a credential (401 or 403) takes a request from the client's
 * bucket of `refusals` (`rate-limit.ts`), and a client whose bucket is empty is answered
 * `429 rate_limited` on every route but `/healthz`, the right credential included, until it refills.
 * Only refusals are counted, so a dashboard that polls with its session never runs into the limit. A
 * foreign `Host` or `Origin` is not counted: its client is the operator's own browser, which a hostile
 * page could otherwise lock out of the dashboard.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { type Logger, SILENT_LOGGER } from '@ebb/core';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { clientAddress, isLoopback, remoteAddress } from './client-address.js';
import { webError } from './errors.js';
import {
  DEFAULT_RATE_LIMIT,
  RateLimiter,
  type RateLimitOptions,
  RateLimitWarnings,
  rateLimited,
} from './rate-limit.js';

export interface AccessOptions {
  /** EBB_ADMIN_TOKEN. Unset: everything but `/healthz` (and the API with `publicApi`) is loopback only. */
  readonly adminToken?: string | undefined;
  /** EBB_METRICS_TOKEN, a read-only credential for `/metrics` (Prometheus' `authorization`). */
  readonly metricsToken?: string | undefined;
  /** `[web] public_api`: the web channel API is open to anyone who reaches the port. */
  readonly publicApi?: boolean | undefined;
  /** How long a session cookie lasts. */
  readonly sessionTtlMs?: number | undefined;
  /** How many refused credentials a client may send before it is answered 429 (a token bucket). */
  readonly refusals?: RateLimitOptions | undefined;
  /** Where a client that meets the refusals limit is told of (`web.rate_limited`, once a minute). */
  readonly logger?: Logger | undefined;
  /** Tests: the clock sessions are signed and checked against. */
  readonly now?: (() => number) | undefined;
}

export const DEFAULT_ACCESS = {
  adminToken: undefined,
  metricsToken: undefined,
  publicApi: false,
  sessionTtlMs: 12 * 60 * 60 * 1000,
  refusals: DEFAULT_RATE_LIMIT,
  logger: SILENT_LOGGER,
  now: Date.now,
} as const satisfies { [K in keyof AccessOptions]-?: AccessOptions[K] };

export const ADMIN_COOKIE = 'ebb_session';

/** The routes' classes, each with its own rule (see the table at the top). */
export type RouteClass = 'health' | 'metrics' | 'api' | 'admin';

export function routeClass(path: string): RouteClass {
  if (path === '/healthz') return 'health';
  if (path === '/metrics') return 'metrics';
  if (path.startsWith('/api/channels/')) return 'api';
  return 'admin';
}

/** The middleware that applies the rule; mount it before every route (`app.use('*', …)`). */
export function accessControl(options: AccessOptions = {}): MiddlewareHandler {
  const now = options.now ?? DEFAULT_ACCESS.now;
  const ttlMs = options.sessionTtlMs ?? DEFAULT_ACCESS.sessionTtlMs;
  const token = options.adminToken;
  const admin =
    token === undefined
      ? undefined
      : { credential: new Credential(token), sessions: new SessionSigner(token) };
  const metrics = options.metricsToken === undefined ? undefined : new Credential(options.metricsToken);
  const refusalLimits = options.refusals ?? DEFAULT_ACCESS.refusals;
  const refusals = new RateLimiter(refusalLimits);
  const warnings = new RateLimitWarnings(
    options.logger ?? DEFAULT_ACCESS.logger,
    refusalLimits,
    'refused_credentials',
  );

  return async (c, next) => {
    const kind = routeClass(c.req.path);
    if (kind === 'health') return next();
    if (kind === 'api' && options.publicApi) return next();
    const client = clientAddress(c);
    const waiting = refusals.peek(client);
    if (!waiting.allowed) {
      warnings.refused(client, waiting.retryAfterMs);
      return rateLimited(c, waiting.retryAfterMs);
    }
    const denied = (status: 401 | 403, error: string) => {
      refusals.take(client);
      return webError(c, status, status === 401 ? 'unauthorized' : 'forbidden', error);
    };

    const bearer = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    if (admin) {
      // `?token=` once: trade it for a session cookie and drop it from the address bar.
      const query = c.req.query('token');
      if (query !== undefined && kind === 'admin') {
        if (!admin.credential.matches(query)) return denied(401, 'the token is not EBB_ADMIN_TOKEN');
        setCookie(c, ADMIN_COOKIE, admin.sessions.sign(now() + ttlMs), {
          httpOnly: true,
          sameSite: 'Strict',
          secure: behindTls(c),
          path: '/',
          maxAge: Math.floor(ttlMs / 1000),
        });
        const url = new URL(c.req.url);
        url.searchParams.delete('token');
        return c.redirect(`${url.pathname}${url.search}`, 303);
      }
      const cookie = getCookie(c, ADMIN_COOKIE);
      if (
        (bearer !== undefined && admin.credential.matches(bearer)) ||
        (cookie && admin.sessions.verify(cookie, now()))
      ) {
        return next();
      }
    }
    if (kind === 'metrics' && metrics && bearer !== undefined && metrics.matches(bearer)) return next();

    const tokenForRoute = kind === 'metrics' ? (metrics ?? admin?.credential) : admin?.credential;
    if (tokenForRoute === undefined) {
      if (isLocalRequest(c)) return crossSiteRefusal(c) ?? next();
      const variable = kind === 'metrics' ? 'EBB_METRICS_TOKEN' : 'EBB_ADMIN_TOKEN';
      return denied(403, `this answers only on loopback; set ${variable} to open it beyond`);
    }
    return denied(
      401,
      kind === 'admin'
        ? 'open this page once with ?token=<EBB_ADMIN_TOKEN>, or send Authorization: Bearer <token>'
        : 'send Authorization: Bearer <token>',
    );
  };
}

/** A secret compared in constant time (through a digest, so lengths never leak). */
class Credential {
  readonly #digest: Buffer;
  constructor(secret: string) {
    this.#digest = sha256(secret);
  }
  matches(candidate: string): boolean {
    return timingSafeEqual(sha256(candidate), this.#digest);
  }
}

/**
 * Session cookies: `v1.<expiry ms>.<HMAC-SHA256 of "v1.<expiry>" under a key derived from the token>`.
 * No server state, so every replica accepts a session any replica signed, and rotating the token ends
 * them all.
 */
export class SessionSigner {
  readonly #key: Buffer;
  constructor(adminToken: string) {
    this.#key = createHmac('sha256', adminToken).update('ebb admin session v1').digest();
  }
  sign(expiresAtMs: number): string {
    const payload = `v1.${Math.floor(expiresAtMs)}`;
    return `${payload}.${this.#mac(payload)}`;
  }
  verify(cookie: string, nowMs: number): boolean {
    const match = /^(v1\.(\d{1,16}))\.([A-Za-z0-9_-]{43})$/.exec(cookie);
    if (!match) return false;
    const [, payload = '', expiry = '', mac = ''] = match;
    const expected = Buffer.from(this.#mac(payload));
    return timingSafeEqual(Buffer.from(mac), expected) && Number(expiry) > nowMs;
  }
  #mac(payload: string): string {
    return createHmac('sha256', this.#key).update(payload).digest('base64url');
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/** From this machine, not forwarded by a proxy on it. */
function isLocalRequest(c: Context): boolean {
  return isLoopback(remoteAddress(c)) && PROXY_HEADERS.every((h) => c.req.header(h) === undefined);
}

/** The names this machine answers to in loopback mode, as `URL.hostname` spells them. */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
const STATE_CHANGING: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A loopback request a page of another site made the operator's browser send (see the top): one
 * addressed to another name (DNS rebinding), or one that changes something from another origin.
 */
function crossSiteRefusal(c: Context): Response | undefined {
  // @hono/node-server builds the URL from `Host` (the server's own address when there is none).
  const url = new URL(c.req.url);
  if (!LOOPBACK_NAMES.has(url.hostname))
    return webError(
      c,
      403,
      'foreign_host',
      `this answers without a token only to Host localhost, 127.0.0.1 or [::1], not ${url.host}; set EBB_ADMIN_TOKEN to serve other names`,
    );
  const origin = c.req.header('origin');
  if (origin !== undefined && STATE_CHANGING.has(c.req.method) && originOf(origin) !== url.origin)
    return webError(
      c,
      403,
      'foreign_origin',
      `a page of ${origin} may not send this; without a token only pages of ${url.origin} and scripts that send no Origin may`,
    );
  return undefined;
}

/** An `Origin` header as `URL.origin` spells it (`null`, or anything unparsable, is no origin). */
function originOf(header: string): string | undefined {
  try {
    const origin = new URL(header).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** Served over TLS, here or at a proxy in front (`X-Forwarded-Proto: https`). */
function behindTls(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
}

/** A `[web] host` that listens only on this machine. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || isLoopback(host);
}

/** What a start with these settings exposes, decided before anything listens. */
export type Exposure =
  | { readonly kind: 'private' }
  | { readonly kind: 'open_api'; readonly warning: string }
  | { readonly kind: 'refused'; readonly reason: string; readonly hint: string };

export function exposure(settings: {
  readonly host: string;
  readonly port: number;
  readonly adminToken: string | undefined;
  readonly publicApi: boolean;
}): Exposure {
  const where = `${settings.host}:${settings.port}`;
  if (settings.publicApi) {
    return {
      kind: 'open_api',
      warning: `[web] public_api = true: anyone who reaches ${where} can post messages, run commands and read the event stream of every web channel`,
    };
  }
  if (isLoopbackHost(settings.host) || settings.adminToken !== undefined) return { kind: 'private' };
  return {
    kind: 'refused',
    reason: `[web] host = "${settings.host}" listens beyond this machine, but EBB_ADMIN_TOKEN is not set`,
    hint: 'set EBB_ADMIN_TOKEN (at least 16 characters, e.g. `openssl rand -hex 24`); or set [web] host = "127.0.0.1"; or, to open the web channel API to anyone on purpose, [web] public_api = true',
  };
}
