import { RecordingLogger } from '@ebb/testing/recording-logger';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import {
  type AccessOptions,
  ADMIN_COOKIE,
  accessControl,
  exposure,
  isLoopbackHost,
  routeClass,
  SessionSigner,
} from './access.js';
import { isLoopback } from './client-address.js';

const ADMIN = 'admin-token-0123456789';
const METRICS = 'metrics-token-0123456789';

/** What @hono/node-server hands the app: the socket the request came in on. */
const from = (remoteAddress: string) => ({ incoming: { socket: { remoteAddress } } });
const LOCAL = from('127.0.0.1');
const REMOTE = from('203.0.113.9');

/** Every kind of route the bot serves, each answering 200 when let in. */
function server(options: AccessOptions) {
  const app = new Hono();
  app.use('*', accessControl(options));
  for (const path of ['/', '/healthz', '/metrics', '/api/dashboard/channels', '/admin/queues']) {
    app.get(path, (c) => c.text('ok'));
  }
  app.get('/api/channels/:id/events', (c) => c.text('ok'));
  app.post('/api/channels/:id/messages', (c) => c.text('ok'));
  return app;
}

const ROUTES = [
  ['GET', '/'],
  ['GET', '/metrics'],
  ['GET', '/api/dashboard/channels'],
  ['GET', '/admin/queues'],
  ['GET', '/api/channels/ops/events'],
  ['POST', '/api/channels/ops/messages'],
] as const;

async function statuses(app: Hono, init: RequestInit, env: object): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [method, path] of ROUTES) {
    out[`${method} ${path}`] = (await app.request(path, { ...init, method }, env)).status;
  }
  return out;
}

const all = (status: number) => Object.fromEntries(ROUTES.map(([m, p]) => [`${m} ${p}`, status]));

describe('accessControl: one rule for every route but /healthz', () => {
  it('sorts routes into their classes', () => {
    expect(
      ['/healthz', '/metrics', '/api/channels/x/messages', '/', '/api/dashboard/channels'].map(routeClass),
    ).toEqual(['health', 'metrics', 'api', 'admin', 'admin']);
  });

  it('without tokens: loopback only, /healthz for anyone', async () => {
    const app = server({});
    expect(await statuses(app, {}, LOCAL)).toEqual(all(200));
    expect(await statuses(app, {}, REMOTE)).toEqual(all(403));
    expect((await app.request('/healthz', {}, REMOTE)).status).toBe(200);
    const body = await (await app.request('/', {}, REMOTE)).json();
    expect(body).toEqual({ code: 'forbidden', error: expect.stringContaining('EBB_ADMIN_TOKEN') });
  });

  it('a request a proxy on this host forwarded is not local', async () => {
    const app = server({});
    for (const header of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const forwarded = await statuses(app, { headers: { [header]: '203.0.113.9' } }, LOCAL);
      expect(forwarded, header).toEqual(all(403));
    }
  });

  it('with the admin token: every route wants it, from loopback too', async () => {
    const app = server({ adminToken: ADMIN });
    expect(await statuses(app, {}, LOCAL)).toEqual(all(401));
    expect(await statuses(app, { headers: { authorization: `Bearer ${ADMIN}` } }, REMOTE)).toEqual(all(200));
    expect(await statuses(app, { headers: { authorization: `Bearer ${ADMIN}x` } }, REMOTE)).toEqual(all(401));
    expect((await app.request('/healthz', {}, REMOTE)).status).toBe(200);
  });

  it('public_api opens the channel API only', async () => {
    const app = server({ publicApi: true });
    expect(await statuses(app, {}, REMOTE)).toEqual({
      ...all(403),
      'GET /api/channels/ops/events': 200,
      'POST /api/channels/ops/messages': 200,
    });
  });

  it('the metrics token opens /metrics and nothing else', async () => {
    const app = server({ adminToken: ADMIN, metricsToken: METRICS });
    const scrape = await statuses(app, { headers: { authorization: `Bearer ${METRICS}` } }, REMOTE);
    expect(scrape).toEqual({ ...all(401), 'GET /metrics': 200 });
    // Without a metrics token, /metrics follows the admin rule.
    const noMetricsToken = server({ adminToken: ADMIN });
    expect((await noMetricsToken.request('/metrics', {}, LOCAL)).status).toBe(401);
    // With a metrics token and no admin token, the rest stays loopback only.
    const metricsOnly = server({ metricsToken: METRICS });
    expect((await metricsOnly.request('/metrics', {}, LOCAL)).status).toBe(401);
    expect((await metricsOnly.request('/', {}, LOCAL)).status).toBe(200);
  });
});

describe('loopback mode: what a page of another site makes the browser on this machine send', () => {
  /** Each route's status for a request addressed to `host` (the URL's host is what `Host` said). */
  const at = async (app: Hono, host: string, init: RequestInit, env: object) => {
    const out: Record<string, number> = {};
    for (const [method, path] of ROUTES) {
      out[`${method} ${path}`] = (
        await app.request(`http://${host}${path}`, { ...init, method }, env)
      ).status;
    }
    return out;
  };

  it('answers only a Host of localhost, 127.0.0.1 or [::1], with or without a port', async () => {
    const app = server({});
    for (const host of [
      'localhost',
      'localhost:3000',
      'LocalHost:3000',
      '127.0.0.1',
      '127.0.0.1:3000',
      '[::1]:3000',
    ]) {
      expect(await at(app, host, {}, LOCAL), host).toEqual(all(200));
    }
    for (const host of [
      'rebound.evil.example',
      'rebound.evil.example:3000',
      'localhost.evil.example:3000',
      '127.0.0.1.nip.io:3000',
      '10.0.0.5:3000',
    ]) {
      expect(await at(app, host, {}, LOCAL), host).toEqual(all(403));
    }
    const res = await app.request('http://rebound.evil.example:3000/api/dashboard/channels', {}, LOCAL);
    expect(await res.json()).toEqual({
      code: 'foreign_host',
      error: expect.stringContaining('rebound.evil.example:3000'),
    });
    // /healthz carries no data and answers anyone.
    expect((await app.request('http://rebound.evil.example/healthz', {}, LOCAL)).status).toBe(200);
  });

  it('refuses a change sent from another origin, and lets its own page, scripts and reads through', async () => {
    const app = server({});
    const post = (origin: string | undefined) =>
      app.request(
        'http://127.0.0.1:3000/api/channels/ops/messages',
        { method: 'POST', headers: origin === undefined ? {} : { origin } },
        LOCAL,
      );
    for (const origin of [
      'https://evil.example',
      'http://localhost:3000',
      'http://127.0.0.1:5173',
      'null',
      'junk',
    ]) {
      const res = await post(origin);
      expect([res.status, ((await res.json()) as { code: string }).code], origin).toEqual([
        403,
        'foreign_origin',
      ]);
    }
    expect((await post('http://127.0.0.1:3000')).status).toBe(200);
    expect((await post(undefined)).status).toBe(200);
    // A read from another origin is answered: the browser keeps it from that page (no CORS header).
    const read = await app.request(
      'http://127.0.0.1:3000/api/dashboard/channels',
      { headers: { origin: 'https://evil.example' } },
      LOCAL,
    );
    expect(read.status).toBe(200);
  });

  it('does not count these refusals: a hostile page cannot lock the operator out', async () => {
    const app = server({ refusals: { perMinute: 60, burst: 2, now: () => 0 } });
    for (let i = 0; i < 5; i++) {
      await app.request('http://rebound.evil.example/api/dashboard/channels', {}, LOCAL);
      await app.request(
        'http://localhost/api/channels/ops/messages',
        { method: 'POST', headers: { origin: 'https://evil.example' } },
        LOCAL,
      );
    }
    expect((await app.request('http://localhost/api/dashboard/channels', {}, LOCAL)).status).toBe(200);
  });

  it('with a token, or for an open API, Host and Origin are not looked at (as before)', async () => {
    const headers = { authorization: `Bearer ${ADMIN}`, origin: 'https://elsewhere.example' };
    const withToken = server({ adminToken: ADMIN });
    expect(await at(withToken, 'ebb.example.com', { headers }, REMOTE)).toEqual(all(200));
    expect(await at(withToken, 'rebound.evil.example', { headers }, LOCAL)).toEqual(all(200));
    expect(await at(withToken, 'rebound.evil.example', {}, LOCAL)).toEqual(all(401));
    const open = server({ publicApi: true });
    const api = await open.request(
      'http://ebb.example.com/api/channels/ops/messages',
      { method: 'POST', headers: { origin: 'https://elsewhere.example' } },
      REMOTE,
    );
    expect(api.status).toBe(200);
  });
});

describe('admin sessions', () => {
  it('?token= trades the token for a signed session cookie, which is not the token', async () => {
    let now = 1_000_000;
    const app = server({ adminToken: ADMIN, sessionTtlMs: 60_000, now: () => now });
    expect((await app.request('/?token=wrong', {}, REMOTE)).status).toBe(401);

    const login = await app.request(`/?token=${ADMIN}&channel=lobby`, {}, REMOTE);
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/?channel=lobby');
    const setCookie = login.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(
      new RegExp(`^${ADMIN_COOKIE}=v1\\.\\d+\\.[\\w-]{43}; Max-Age=60; Path=/; HttpOnly; SameSite=Strict$`),
    );
    expect(setCookie).not.toContain(ADMIN);
    const cookie = setCookie.split(';')[0] ?? '';
    const session = cookie.slice(ADMIN_COOKIE.length + 1);

    expect((await app.request('/', { headers: { cookie } }, REMOTE)).status).toBe(200);
    expect((await app.request('/api/channels/x/events', { headers: { cookie } }, REMOTE)).status).toBe(200);
    // The session is not a bearer token.
    expect((await app.request('/', { headers: { authorization: `Bearer ${session}` } }, REMOTE)).status).toBe(
      401,
    );
    // It expires.
    now += 60_001;
    expect((await app.request('/', { headers: { cookie } }, REMOTE)).status).toBe(401);
  });

  it('is Secure behind TLS', async () => {
    const app = server({ adminToken: ADMIN });
    const login = await app.request(
      `/?token=${ADMIN}`,
      { headers: { 'x-forwarded-proto': 'https' } },
      REMOTE,
    );
    expect(login.headers.get('set-cookie')).toContain('; Secure');
  });

  it('a forged, altered or other-token session is refused', () => {
    const signer = new SessionSigner(ADMIN);
    const good = signer.sign(2_000);
    expect(signer.verify(good, 1_000)).toBe(true);
    expect(signer.verify(good, 2_000)).toBe(false);
    const [version, expiry, mac] = good.split('.');
    // A later expiry under the old signature.
    expect(signer.verify(`${version}.${Number(expiry) + 1_000_000}.${mac}`, 1_000)).toBe(false);
    expect(new SessionSigner('another-token-0123456789').verify(good, 1_000)).toBe(false);
    for (const junk of ['', 'v1', 'v1.5.', `v1.5.${'A'.repeat(43)}`, `${good}x`, good.toUpperCase()]) {
      expect(signer.verify(junk, 1_000), junk).toBe(false);
    }
  });
});

describe('refused credentials are rate limited', () => {
  const OTHER = from('203.0.113.10');

  it('a client guessing the token on / gets 429 after the burst, even for the right token, until it refills', async () => {
    let now = 0;
    const app = server({ adminToken: ADMIN, refusals: { perMinute: 60, burst: 3, now: () => now } });
    const guesses = [
      '/?token=guess-1',
      '/?token=guess-2',
      { path: '/', headers: { authorization: 'Bearer guess-3' } },
      '/?token=guess-4',
      { path: '/', headers: { authorization: 'Bearer guess-5' } },
    ];
    const answers = [];
    for (const guess of guesses) {
      const { path, headers } = typeof guess === 'string' ? { path: guess, headers: {} } : guess;
      answers.push(await app.request(path, { headers }, REMOTE));
    }
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 429, 429]);
    expect(answers[3]?.headers.get('retry-after')).toBe('1');
    expect(await answers[4]?.json()).toMatchObject({ code: 'rate_limited' });
    // A right guess now does not tell itself apart; another client is not held back.
    expect((await app.request('/', { headers: { authorization: `Bearer ${ADMIN}` } }, REMOTE)).status).toBe(
      429,
    );
    expect((await app.request('/?token=guess-6', {}, OTHER)).status).toBe(401);
    expect((await app.request('/healthz', {}, REMOTE)).status).toBe(200);
    now += 1_000;
    expect((await app.request('/', { headers: { authorization: `Bearer ${ADMIN}` } }, REMOTE)).status).toBe(
      200,
    );
  });

  it('counts only refusals: a client with the credential polls as often as it likes', async () => {
    const app = server({ adminToken: ADMIN, refusals: { perMinute: 60, burst: 3, now: () => 0 } });
    const polls = [];
    for (let i = 0; i < 10; i++) {
      polls.push(
        (
          await app.request(
            '/api/dashboard/channels',
            { headers: { authorization: `Bearer ${ADMIN}` } },
            REMOTE,
          )
        ).status,
      );
    }
    expect(polls).toEqual(Array(10).fill(200));
  });

  it('logs a client that meets the limit, once a minute', async () => {
    let now = 0;
    const log = new RecordingLogger();
    const app = server({
      adminToken: ADMIN,
      refusals: { perMinute: 60, burst: 1, now: () => now },
      logger: log,
    });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.request('/?token=guess', {}, REMOTE)).status);
    expect(statuses).toEqual([401, 429, 429, 429]);
    expect(log.events('web.rate_limited').map((e) => e.fields)).toEqual([
      expect.objectContaining({
        client: '203.0.113.9',
        limit: 'refused_credentials',
        burst: 1,
        perMinute: 60,
      }),
    ]);
    now += 60_000;
    await app.request('/?token=guess', {}, REMOTE);
    expect((await app.request('/?token=guess', {}, REMOTE)).status).toBe(429);
    expect(log.events('web.rate_limited')).toHaveLength(2);
  });

  it('counts loopback-only refusals (403) too', async () => {
    const app = server({ refusals: { perMinute: 60, burst: 2, now: () => 0 } });
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await app.request('/', {}, REMOTE)).status);
    expect(answers).toEqual([403, 403, 429]);
    expect((await app.request('/', {}, LOCAL)).status).toBe(200);
  });
});

describe('exposure: never open by accident', () => {
  const base = { port: 3000, adminToken: undefined, publicApi: false };

  it('refuses a host beyond loopback without a token, and says what to set', () => {
    const refused = exposure({ ...base, host: '0.0.0.0' });
    expect(refused).toMatchObject({ kind: 'refused', reason: expect.stringContaining('EBB_ADMIN_TOKEN') });
    expect(refused.kind === 'refused' && refused.hint).toContain('public_api = true');
    expect(exposure({ ...base, host: '::' }).kind).toBe('refused');
    expect(exposure({ ...base, host: '10.1.2.3' }).kind).toBe('refused');
  });

  it('allows loopback, a token, or an explicit public_api (with a warning)', () => {
    for (const host of ['127.0.0.1', '::1', 'localhost'])
      expect(exposure({ ...base, host }).kind).toBe('private');
    expect(exposure({ ...base, host: '0.0.0.0', adminToken: ADMIN }).kind).toBe('private');
    const open = exposure({ ...base, host: '0.0.0.0', publicApi: true });
    expect(open).toMatchObject({ kind: 'open_api', warning: expect.stringContaining('0.0.0.0:3000') });
  });

  it('knows loopback addresses and hosts', () => {
    expect(['127.0.0.1', '::1', '::ffff:127.0.0.1'].every(isLoopback)).toBe(true);
    expect([undefined, '10.0.0.1', '::ffff:10.0.0.1', '1.127.0.0'].some(isLoopback)).toBe(false);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('0.0.0.0')).toBe(false);
  });
});
