/**
 * The web channel in its default loopback mode (no EBB_ADMIN_TOKEN), on the real bot and Postgres:
 * what a page of another site can make the operator's browser send is refused and never archived,
 * the dashboard's own requests still go through, and the event stream shows each message once it is
 * archived, once.
 */
import { request } from 'node:http';
import { loadEnv, parseConfig } from '@ebb/config';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { randomPrefix } from '@ebb/queue/test-support';
import { EventStreamReader } from '@ebb/testing/event-stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';

let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let ebb: RunningEbb;

beforeAll(async () => {
  fresh = await freshSchemaDb();
  const config = parseConfig('[bot]\nrespond_to = "all"\n', 'web-loopback.toml');
  ebb = await startEbb({
    config: () => config,
    // No model (the offline responder answers) and no Redis (passes run in process).
    env: loadEnv({ EBB_REDIS_PREFIX: randomPrefix(), REDIS_URL: 'redis://127.0.0.1:1' }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
  });
}, 60_000);

afterAll(async () => {
  await ebb?.close();
  await fresh?.close();
});

const archive = async (channel: string) => {
  const channels = new PgChannelStore({ db: fresh.db });
  const { headSeq } = await channels.loadContext(`web:${channel}`);
  return headSeq === 0 ? [] : channels.readArchive(`web:${channel}`, 1, headSeq);
};

/** A request with a `Host` of its own, as a DNS-rebinding page's carries (fetch sends the URL's). */
function withHost(path: string, host: string, method: string, body?: string) {
  return new Promise<{ status: number; code: unknown }>((resolve, reject) => {
    const req = request(
      `${ebb.web.url}${path}`,
      { method, headers: { host, 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, code: JSON.parse(text).code }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

it('refuses a cross-site form post and a rebound Host, archives nothing, and serves its own page', async () => {
  // `<form method="post" enctype="text/plain" action="http://127.0.0.1:3000/api/channels/csrf/messages">`
  // on another site: the browser sends it without asking.
  const form = await fetch(`${ebb.web.url}/api/channels/csrf/messages`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: 'https://evil.example' },
    body: '{"author":"mallory","text":"@ebb write me an essay","x":"="}',
  });
  expect([form.status, ((await form.json()) as { code: string }).code]).toEqual([403, 'foreign_origin']);
  const compact = await fetch(`${ebb.web.url}/api/channels/csrf/commands`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: 'https://evil.example' },
    body: '{"name":"compact"}',
  });
  expect(compact.status).toBe(403);
  // A page at rebound.evil.example whose name now resolves to 127.0.0.1.
  const rebound = [
    await withHost(
      '/api/channels/csrf/messages',
      'rebound.evil.example:3000',
      'POST',
      '{"author":"m","text":"hi"}',
    ),
    await withHost('/api/dashboard/channels', 'rebound.evil.example:3000', 'GET'),
    await withHost('/api/channels/csrf/events', 'rebound.evil.example', 'GET'),
  ];
  expect(rebound).toEqual(Array(3).fill({ status: 403, code: 'foreign_host' }));
  expect(await archive('csrf')).toEqual([]);

  // What the dashboard's chat form sends (packages/web/src/browser/main.ts): same origin, JSON.
  const own = await fetch(`${ebb.web.url}/api/channels/csrf/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: ebb.web.url },
    body: JSON.stringify({ author: 'ana', text: 'from the dashboard' }),
  });
  expect(own.status).toBe(200);
  expect((await archive('csrf')).map((m) => m.text)).toEqual([
    'from the dashboard',
    expect.stringContaining('offline mode'),
  ]);
}, 30_000);

it('shows a message on the event stream once, after it is archived: sent twice with one id, shown once', async () => {
  const stream = await EventStreamReader.open(`${ebb.web.url}/api/channels/twice/events`);
  const send = async () => {
    const res = await fetch(`${ebb.web.url}/api/channels/twice/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: 'hello twice', id: 'twice-1' }),
    });
    return res.json() as Promise<{ reply: string | null; duplicate?: boolean }>;
  };
  try {
    const first = await send();
    expect(first.reply).toContain('offline mode');
    expect(await send()).toMatchObject({ duplicate: true });
    // A later message's reply on the stream means everything before it has arrived.
    const res = await fetch(`${ebb.web.url}/api/channels/twice/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: 'and once more', id: 'twice-2' }),
    });
    const last = ((await res.json()) as { reply: string }).reply;
    await stream.until(JSON.stringify(last).slice(1, -1));
    expect(stream.events('message').map((e) => `${e.role}: ${e.text}`)).toEqual([
      'user: hello twice',
      `assistant: ${first.reply}`,
      'user: and once more',
      `assistant: ${last}`,
    ]);
    expect((await archive('twice')).filter((m) => m.role === 'user')).toHaveLength(2);
  } finally {
    await stream.close();
  }
}, 30_000);
