import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { accessControl } from './access.js';
import { type DashboardChannel, mountDashboard } from './dashboard.js';

const channel: DashboardChannel = {
  key: 'web:lobby',
  usage: 0.42,
  thresholds: { background: 0.8, aggressive: 0.85, emergency: 0.95 },
  tokens: { context: 1000, reserved: 200, budget: 3700 },
  spans: { summaries: 1, truncations: 0, summaryTokens: 120 },
  passes: [],
};

/** What @hono/node-server hands the app: the socket the request came in on. */
const from = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });

function dashboard(adminToken?: string) {
  const app = new Hono();
  app.use('*', accessControl({ adminToken }));
  mountDashboard(app, { tokenRequired: adminToken !== undefined, channels: async () => [channel] });
  return app;
}

describe('mountDashboard', () => {
  it('says in the page whether it answers loopback only', async () => {
    const open = await dashboard().request('/', {}, from('127.0.0.1'));
    expect(await open.text()).toContain('answers only on loopback');
    const guarded = await dashboard('t'.repeat(16)).request('/', {
      headers: { authorization: `Bearer ${'t'.repeat(16)}` },
    });
    expect(await guarded.text()).toContain('Signed in with the admin token');
  });

  it('without a BullMQ queue, the board route says the queue is in-process', async () => {
    const res = await dashboard('t'.repeat(16)).request('/admin/queues', {
      headers: { authorization: `Bearer ${'t'.repeat(16)}` },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('in-process queue');
    expect((await dashboard('t'.repeat(16)).request('/admin/queues')).status).toBe(401);
  });
});
