/**
 * The operator's dashboard, served by the bot next to the web channel:
 *
 *   GET /                          the page (plain HTML, CSS and JS; no build step)
 *   GET /api/dashboard/channels    every channel: usage, thresholds, tokens, spans, recent passes
 *   GET /admin/queues              the BullMQ board (or a note that the queue is in-process)
 *
 * The page draws, for the selected web channel, a context gauge with marks at its three thresholds,
 * a timeline of passes fed live by the channel's event stream (`compaction` events), the summary
 * spans and the channel's chat.
 *
 * Admin auth: with an `adminToken`, these routes want `Authorization: Bearer <token>` or a cookie set
 * by opening any of them once with `?token=<token>`. Without one, they answer only loopback clients.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { getConnInfo } from '@hono/node-server/conninfo';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { DASHBOARD_HTML } from './dashboard-page.js';

/** A pass as the dashboard lists it (a subset of `ebb status --json`'s passes). */
export interface DashboardPass {
  readonly jobId: string;
  readonly tier: string;
  readonly status: string;
  readonly tokensBefore: number | null;
  readonly tokensAfter: number | null;
  readonly durationMs: number | null;
  readonly createdAt: string | null;
}

/** A channel as `GET /api/dashboard/channels` returns it. */
export interface DashboardChannel {
  readonly key: string;
  /** Share of the prompt budget in use (1 = full), calibrated. */
  readonly usage: number;
  readonly thresholds: {
    readonly background: number;
    readonly aggressive: number;
    readonly emergency: number;
  };
  readonly tokens: { readonly context: number; readonly reserved: number; readonly budget: number };
  readonly spans: {
    readonly summaries: number;
    readonly truncations: number;
    readonly summaryTokens: number;
  };
  /** Newest first. */
  readonly passes: readonly DashboardPass[];
  /** The channel's most important memories (those recall draws from). */
  readonly memories?: readonly { readonly type: string; readonly text: string; readonly speaker?: string }[];
}

export type BoardQueue = ConstructorParameters<typeof BullMQAdapter>[0];

export interface DashboardOptions {
  /** Required for every dashboard route when set; unset: loopback clients only. */
  readonly adminToken?: string | undefined;
  readonly channels: () => Promise<readonly DashboardChannel[]>;
  /** The BullMQ queue to show at /admin/queues; absent when passes run in-process. */
  readonly queue?: BoardQueue | undefined;
}

export const ADMIN_COOKIE = 'ebb_admin';
const BOARD_PATH = '/admin/queues';

export function mountDashboard(app: Hono, options: DashboardOptions): void {
  const auth = adminAuth(options.adminToken);
  for (const path of ['/', '/api/dashboard/*', BOARD_PATH, `${BOARD_PATH}/*`]) app.use(path, auth);

  const page = DASHBOARD_HTML.replace(
    '%AUTH_NOTE%',
    options.adminToken === undefined
      ? 'No EBB_ADMIN_TOKEN is set: this dashboard answers only on loopback (127.0.0.1, ::1).'
      : 'Signed in with the admin token.',
  );
  app.get('/', (c) => c.html(page));
  app.get('/api/dashboard/channels', async (c) => c.json({ channels: await options.channels() }));

  if (options.queue === undefined) {
    const note = (c: Context) =>
      c.text(
        'No BullMQ queue: compaction passes run in this process (in-process queue), so there is no board.',
      );
    app.get(BOARD_PATH, note);
    app.get(`${BOARD_PATH}/*`, note);
    return;
  }
  const serverAdapter = new HonoAdapter(serveStatic);
  createBullBoard({ queues: [new BullMQAdapter(options.queue, { readOnlyMode: false })], serverAdapter });
  serverAdapter.setBasePath(BOARD_PATH);
  app.route(BOARD_PATH, serverAdapter.registerPlugin());
}

/** Bearer token or the cookie a `?token=` visit set; without a configured token, loopback only. */
export function adminAuth(adminToken: string | undefined): MiddlewareHandler {
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  return async (c, next) => {
    if (expected === undefined) {
      if (!isLoopback(remoteAddress(c))) {
        return c.text('Forbidden: set EBB_ADMIN_TOKEN to open the dashboard beyond loopback.', 403);
      }
      return next();
    }
    const query = c.req.query('token');
    if (query !== undefined && same(digest(query), expected)) {
      setCookie(c, ADMIN_COOKIE, expected.toString('hex'), {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/',
      });
      const url = new URL(c.req.url);
      url.searchParams.delete('token');
      return c.redirect(`${url.pathname}${url.search}`, 303);
    }
    const bearer = /^Bearer (.+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
    const cookie = getCookie(c, ADMIN_COOKIE);
    const ok =
      (bearer !== undefined && same(digest(bearer), expected)) ||
      (cookie !== undefined && /^[0-9a-f]{64}$/.test(cookie) && same(Buffer.from(cookie, 'hex'), expected));
    if (!ok) return c.text('Unauthorized: open this page once with ?token=<EBB_ADMIN_TOKEN>.', 401);
    return next();
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(`ebb-admin:${token}`).digest();
}

function same(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function remoteAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    return undefined; // not served by @hono/node-server (app.request in tests)
  }
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
