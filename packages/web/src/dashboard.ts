/**
 * The operator's dashboard, served by the bot next to the web channel:
 *
 *   GET /                                         the page (HTML, CSS and the script `browser/` bundles to)
 *   GET /api/dashboard/channels                   every channel of every platform, for the list
 *   GET /api/dashboard/channels/:key              one channel: spans, passes, its top memories
 *   GET /api/dashboard/channels/:key/history      the archive's last messages, with the spans
 *   GET /api/dashboard/channels/:key/usage        usage over time and a mark per pass
 *   GET /api/dashboard/channels/:key/suggestion   ebb simulate --suggest on its last messages (read-only)
 *   GET /api/dashboard/events                     text/event-stream: turns and compaction events
 *   GET /admin/queues                             the BullMQ board (or a note that the queue is in-process)
 *
 * The data comes from a `DashboardSource` (`dashboard-api.ts`), which the bot implements on its
 * stores. `:key` is the channel key, URI-encoded (`slack%3AT1%3AC1`).
 *
 * Who may open them is decided by the web channel's access rule (`access.ts`, the `admin` class),
 * mounted before them.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import {
  DASHBOARD_LIMITS,
  type DashboardChannelList,
  type DashboardEvent,
  type DashboardSource,
  type HistoryPage,
} from './dashboard-api.js';
import { dashboardScript } from './dashboard-bundle.js';
import { dashboardPage } from './dashboard-page.js';
import { webError } from './errors.js';

export type BoardQueue = ConstructorParameters<typeof BullMQAdapter>[0];

export interface DashboardOptions {
  /** Whether EBB_ADMIN_TOKEN guards the page (else it answers loopback only); the page says which. */
  readonly tokenRequired: boolean;
  readonly source: DashboardSource;
  /** The BullMQ queue to show at /admin/queues; absent when passes run in-process. */
  readonly queue?: BoardQueue | undefined;
  /** Aborted when the server stops: open event streams end, so shutdown does not wait on them. */
  readonly closing?: AbortSignal | undefined;
  /** Seconds between keep-alive comments on the event stream (proxies drop idle connections). */
  readonly keepAliveSeconds?: number;
}

const BOARD_PATH = '/admin/queues';
/** Channel keys are `platform:…` of printable characters (Slack thread keys are the longest). */
const CHANNEL_KEY = /^[a-z]+:[\x21-\x7e]{1,300}$/;

export function mountDashboard(app: Hono, options: DashboardOptions): void {
  const { source } = options;
  const authNote = !options.tokenRequired
    ? 'No EBB_ADMIN_TOKEN is set: this dashboard answers only on loopback (127.0.0.1, ::1).'
    : 'Signed in with the admin token.';
  // Made on the first request (from the sources that bundles the script); a failure is not kept.
  let page: Promise<string> | undefined;
  const pageOnce = () => {
    if (page === undefined) {
      const made = dashboardScript().then((script) => dashboardPage(authNote, script));
      made.catch(() => {
        if (page === made) page = undefined;
      });
      page = made;
    }
    return page;
  };
  app.get('/', async (c) => c.html(await pageOnce()));
  app.get('/api/dashboard/channels', async (c) =>
    c.json({ channels: await source.channels() } satisfies DashboardChannelList),
  );
  app.get('/api/dashboard/events', (c) => eventStream(c, options));
  app.get('/api/dashboard/channels/:key', async (c) => {
    const key = channelKey(c);
    if (key === undefined) return badKey(c);
    const detail = await source.channel(key);
    return detail === undefined ? unknown(c, key) : c.json(detail);
  });
  app.get('/api/dashboard/channels/:key/history', async (c) => {
    const key = channelKey(c);
    if (key === undefined) return badKey(c);
    const page = historyPage(c.req.query('before'), c.req.query('after'), c.req.query('limit'));
    if (typeof page === 'string') return webError(c, 400, 'bad_query', page);
    const history = await source.history(key, page);
    return history === undefined ? unknown(c, key) : c.json(history);
  });
  app.get('/api/dashboard/channels/:key/usage', async (c) => {
    const key = channelKey(c);
    if (key === undefined) return badKey(c);
    const usage = await source.usage(key);
    return usage === undefined ? unknown(c, key) : c.json(usage);
  });
  app.get('/api/dashboard/channels/:key/suggestion', async (c) => {
    const key = channelKey(c);
    if (key === undefined) return badKey(c);
    const suggestion = await source.suggestion?.(key);
    return suggestion === undefined ? unknown(c, key) : c.json(suggestion);
  });
  mountBoard(app, options.queue);
}

function channelKey(c: Context): string | undefined {
  const key = c.req.param('key') ?? '';
  return CHANNEL_KEY.test(key) ? key : undefined;
}

const badKey = (c: Context) =>
  webError(c, 400, 'bad_channel_id', 'a channel key is "platform:…", printable ASCII, URI-encoded');
const unknown = (c: Context, key: string) =>
  webError(c, 404, 'unknown_channel', `no channel ${JSON.stringify(key)}`);

/** `?before=` or `?after=` (a seq) and `?limit=`; a sentence when they are not what the route takes. */
export function historyPage(
  before: string | undefined,
  after: string | undefined,
  limit: string | undefined,
): HistoryPage | string {
  const seqOf = (v: string) => (/^\d{1,10}$/.test(v) ? Number(v) : undefined);
  const size = limit === undefined ? DASHBOARD_LIMITS.historyPage : seqOf(limit);
  if (size === undefined || size < 1 || size > DASHBOARD_LIMITS.historyPageMax)
    return `"limit" is a number from 1 to ${DASHBOARD_LIMITS.historyPageMax}`;
  if (before !== undefined && after !== undefined) return 'give "before" or "after", not both';
  if (before !== undefined) {
    const seq = seqOf(before);
    return seq === undefined ? '"before" is a seq' : { kind: 'before', seq, limit: size };
  }
  if (after !== undefined) {
    const seq = seqOf(after);
    return seq === undefined ? '"after" is a seq' : { kind: 'after', seq, limit: size };
  }
  return { kind: 'latest', limit: size };
}

function eventStream(c: Context, options: DashboardOptions): Response {
  const keepAliveMs = (options.keepAliveSeconds ?? 25) * 1000;
  return streamSSE(c, async (stream) => {
    const forward = (event: DashboardEvent) => {
      void stream.writeSSE({ event: event.type, data: JSON.stringify(event) });
    };
    const unsubscribe = options.source.subscribe(forward);
    const keepAlive = setInterval(() => void stream.write(': keep-alive\n\n'), keepAliveMs);
    try {
      await stream.writeSSE({ event: 'ready', data: '{}' });
      // Until the client goes away or the server stops.
      await new Promise<void>((resolve) => {
        stream.onAbort(resolve);
        if (options.closing?.aborted) resolve();
        options.closing?.addEventListener('abort', () => resolve(), { once: true });
      });
    } finally {
      clearInterval(keepAlive);
      unsubscribe();
    }
  });
}

function mountBoard(app: Hono, queue: BoardQueue | undefined): void {
  if (queue === undefined) {
    const note = (c: Context) =>
      c.text(
        'No BullMQ queue: compaction passes run in this process (in-process queue), so there is no board.',
      );
    app.get(BOARD_PATH, note);
    app.get(`${BOARD_PATH}/*`, note);
    return;
  }
  const serverAdapter = new HonoAdapter(serveStatic);
  createBullBoard({ queues: [new BullMQAdapter(queue, { readOnlyMode: false })], serverAdapter });
  serverAdapter.setBasePath(BOARD_PATH);
  app.route(BOARD_PATH, serverAdapter.registerPlugin());
}
