import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { ADMIN_COOKIE, type DashboardChannel, isLoopback, mountDashboard } from './dashboard.js';

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
  mountDashboard(app, { adminToken, channels: async () => [channel] });
  return app;
}

describe('mountDashboard', () => {
  it('without a token, serves loopback clients only and says so in the page', async () => {
    const app = dashboard();
    const page = await app.request('/', {}, from('127.0.0.1'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('answers only on loopback');
    expect((await app.request('/api/dashboard/channels', {}, from('::1'))).status).toBe(200);
    expect((await app.request('/', {}, from('10.0.0.7'))).status).toBe(403);
    expect((await app.request('/admin/queues', {}, from('192.168.1.2'))).status).toBe(403);
  });

  it('with a token, wants it as a bearer or a cookie set once by ?token=', async () => {
    const app = dashboard('s3cret');
    expect((await app.request('/api/dashboard/channels', {}, from('127.0.0.1'))).status).toBe(401);
    expect((await app.request('/?token=wrong', {}, from('10.0.0.7'))).status).toBe(401);

    const bearer = await app.request('/api/dashboard/channels', {
      headers: { authorization: 'Bearer s3cret' },
    });
    expect(bearer.status).toBe(200);
    expect(await bearer.json()).toEqual({ channels: [channel] });

    const login = await app.request('/?token=s3cret&channel=lobby', {}, from('10.0.0.7'));
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/?channel=lobby');
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`^${ADMIN_COOKIE}=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict`));
    expect(setCookie).not.toContain('s3cret');
    const cookie = setCookie.split(';')[0] ?? '';
    const page = await app.request('/', { headers: { cookie } }, from('10.0.0.7'));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('id="gauge"');
    expect(
      (await app.request('/', { headers: { cookie: `${ADMIN_COOKIE}=${'0'.repeat(64)}` } })).status,
    ).toBe(401);
  });

  it('without a BullMQ queue, the board route says the queue is in-process', async () => {
    const res = await dashboard('t').request('/admin/queues', { headers: { authorization: 'Bearer t' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('in-process queue');
    expect((await dashboard('t').request('/admin/queues')).status).toBe(401);
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect([undefined, '10.0.0.1', '::ffff:10.0.0.1', '1.127.0.0'].some(isLoopback)).toBe(false);
  });
});
