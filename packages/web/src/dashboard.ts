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
 * Who may open them is decided by the web channel's access rule (`access.ts`), mounted before them.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Context, Hono } from 'hono';
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
  /** Tool results microcompaction has stubbed, ever, and the tokens that saved. */
  readonly microcompaction?: { readonly stubbed: number; readonly tokensSaved: number };
  /** Newest first. */
  readonly passes: readonly DashboardPass[];
  /** The channel's most important memories (those recall draws from). */
  readonly memories?: readonly { readonly type: string; readonly text: string; readonly speaker?: string }[];
}

export type BoardQueue = ConstructorParameters<typeof BullMQAdapter>[0];

export interface DashboardOptions {
  /** Whether EBB_ADMIN_TOKEN guards the page (else it answers loopback only); the page says which. */
  readonly tokenRequired: boolean;
  readonly channels: () => Promise<readonly DashboardChannel[]>;
  /** The BullMQ queue to show at /admin/queues; absent when passes run in-process. */
  readonly queue?: BoardQueue | undefined;
}

const BOARD_PATH = '/admin/queues';

export function mountDashboard(app: Hono, options: DashboardOptions): void {
  const page = DASHBOARD_HTML.replace(
    '%AUTH_NOTE%',
    !options.tokenRequired
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
