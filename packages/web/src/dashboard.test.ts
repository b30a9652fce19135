import { EventStreamReader } from '@ebb/testing/event-stream';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { accessControl } from './access.js';
import { historyPage, mountDashboard } from './dashboard.js';
import type { DashboardChannelRow, DashboardEvent, DashboardSource, HistoryPage } from './dashboard-api.js';

const row: DashboardChannelRow = {
  key: 'slack:T1:C1',
  platform: 'slack',
  usage: 0.42,
  reached: 'none',
  thresholds: { background: 0.8, aggressive: 0.85, emergency: 0.95 },
  tokens: { context: 1000, reserved: 200, budget: 3700, calibration: 1, provider: 1200 },
  messages: 12,
  lastActiveAt: null,
  takeBacks: { pending: 0, oldest: null },
};

/** A source over one channel that records the history pages asked for. */
function fakeSource() {
  const pages: HistoryPage[] = [];
  const listeners = new Set<(e: DashboardEvent) => void>();
  const source: DashboardSource = {
    channels: async () => [row],
    channel: async (key) =>
      key === row.key
        ? {
            ...row,
            spans: { summaries: 0, truncations: 0, summaryTokens: 0 },
            inContext: 12,
            passes: [],
            memories: [],
            memoryCount: 0,
            lastDay: null,
            budget: null,
          }
        : undefined,
    history: async (key, page) => {
      pages.push(page);
      return key === row.key
        ? { key, headSeq: 12, prefixEnd: 0, fromSeq: 1, toSeq: 12, messages: [], spans: [] }
        : undefined;
    },
    usage: async (key) =>
      key === row.key ? { key, thresholds: row.thresholds, points: [], marks: [] } : undefined,
    suggestion: async (key) =>
      key === row.key ? { key, computedAt: '2026-11-27T10:00:00.000Z', status: 'no_history' } : undefined,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return { source, pages, listeners };
}

/** What @hono/node-server hands the app: the socket the request came in on. */
const from = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });
const TOKEN = 't'.repeat(16);
const auth = { headers: { authorization: `Bearer ${TOKEN}` } };

function dashboard(adminToken?: string, closing?: AbortSignal) {
  const app = new Hono();
  const fake = fakeSource();
  app.use('*', accessControl({ adminToken }));
  mountDashboard(app, { tokenRequired: adminToken !== undefined, source: fake.source, closing });
  return { app, ...fake };
}

describe('mountDashboard', () => {
  it('says in the page whether it answers loopback only', async () => {
    const open = await dashboard().app.request('/', {}, from('127.0.0.1'));
    expect(await open.text()).toContain('answers only on loopback');
    const guarded = await dashboard(TOKEN).app.request('/', auth);
    expect(await guarded.text()).toContain('Signed in with the admin token');
  });

  it('keeps every dashboard route behind the admin rule', async () => {
    const { app } = dashboard(TOKEN);
    for (const path of [
      '/api/dashboard/channels',
      '/api/dashboard/channels/slack%3AT1%3AC1',
      '/api/dashboard/channels/slack%3AT1%3AC1/history',
      '/api/dashboard/channels/slack%3AT1%3AC1/usage',
      '/api/dashboard/channels/slack%3AT1%3AC1/suggestion',
      '/api/dashboard/events',
    ]) {
      expect((await app.request(path)).status, path).toBe(401);
    }
    expect((await app.request('/api/dashboard/channels', auth)).status).toBe(200);
  });

  it('reads a channel by its encoded key, 404 for an unknown one, 400 for a malformed one', async () => {
    const { app, pages } = dashboard(TOKEN);
    const detail = await app.request('/api/dashboard/channels/slack%3AT1%3AC1', auth);
    expect(await detail.json()).toMatchObject({ key: 'slack:T1:C1', memoryCount: 0 });
    const missing = await app.request('/api/dashboard/channels/web%3Anope/usage', auth);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'unknown_channel' });
    expect((await app.request('/api/dashboard/channels/no-platform', auth)).status).toBe(400);
    const suggestion = await app.request('/api/dashboard/channels/slack%3AT1%3AC1/suggestion', auth);
    expect(await suggestion.json()).toMatchObject({ key: 'slack:T1:C1', status: 'no_history' });
    expect((await app.request('/api/dashboard/channels/web%3Anope/suggestion', auth)).status).toBe(404);
    await app.request('/api/dashboard/channels/slack%3AT1%3AC1/history?before=7&limit=5', auth);
    expect(pages).toEqual([{ kind: 'before', seq: 7, limit: 5 }]);
    const bad = await app.request('/api/dashboard/channels/slack%3AT1%3AC1/history?limit=5000', auth);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'bad_query' });
  });

  it('streams the source events until the server closes, then lets go of its listener', async () => {
    const closing = new AbortController();
    const { app, listeners } = dashboard(TOKEN, closing.signal);
    const stream = new EventStreamReader(await app.request('/api/dashboard/events', auth));
    await stream.until('event: ready');
    expect(listeners.size).toBe(1);
    for (const l of listeners) l({ type: 'turn', channel: 'slack:T1:C1', usage: 0.5, at: 1 });
    await stream.until('event: turn');
    expect(stream.events('turn')).toEqual([expect.objectContaining({ usage: 0.5 })]);
    closing.abort();
    await stream.ended();
    expect(listeners.size).toBe(0);
  });

  it('without a BullMQ queue, the board route says the queue is in-process', async () => {
    const res = await dashboard(TOKEN).app.request('/admin/queues', auth);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('in-process queue');
    expect((await dashboard(TOKEN).app.request('/admin/queues')).status).toBe(401);
  });
});

describe('historyPage', () => {
  it('reads before, after and limit, and says what is wrong', () => {
    expect(historyPage(undefined, undefined, undefined)).toEqual({ kind: 'latest', limit: 50 });
    expect(historyPage(undefined, '40', '200')).toEqual({ kind: 'after', seq: 40, limit: 200 });
    expect(historyPage('1', '2', undefined)).toMatch(/not both/);
    expect(historyPage('x', undefined, undefined)).toMatch(/"before" is a seq/);
    expect(historyPage(undefined, undefined, '0')).toMatch(/"limit"/);
  });
});
