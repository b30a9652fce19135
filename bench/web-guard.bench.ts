/**
 * What the web channel's guards cost a request: the secure headers, the per-client rate limit, the
 * access rule and the body limit, as `mountGuards` mounts them in WebAdapter, measured over real HTTP
 * on loopback. Every server is one hono app with the same trivial route (parse the JSON body, answer),
 * one without the guards and the others with them, so the difference is the guards alone. Rounds
 * alternate the servers so a noisy moment hits each alike; the ratio is within one run.
 *
 * Then the request span (`traceRequests`, registered first in WebAdapter): the guarded server
 * against the same with the span in front, first with tracing off (the API's no-op), then with the
 * SDK started and exporting to a local OTLP collector (`FakeOtlpCollector`), as in production.
 */
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SILENT_LOGGER } from '@ebb/core';
import { startTracing } from '@ebb/observability';
import { FakeOtlpCollector } from '@ebb/testing/otlp';
import { mountGuards, traceRequests } from '@ebb/web';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { median, nowMs, percentile, table } from './support.js';

const REQUESTS_PER_ROUND = 500;
const ROUNDS = 6;
const TOKEN = 'bench-admin-token-0123456789';
const BODY = JSON.stringify({ author: 'ana', text: 'a message of a usual length, about the deploy' });

/** The route, behind the guards when `guards` is given: parse the body, answer. */
async function server(
  guards?: { readonly adminToken?: string },
  traced = false,
): Promise<{ url: string; close: () => Promise<void> }> {
  const app = new Hono();
  if (traced) app.use('*', traceRequests());
  if (guards) {
    mountGuards(app, {
      access: { adminToken: guards.adminToken },
      // A limit that is checked on every request but never reached here.
      rateLimit: { perMinute: 10_000_000, burst: 10_000_000 },
    });
  }
  app.post('/api/channels/:id/messages', async (c) => {
    const body = (await c.req.json()) as { author?: string; text?: string };
    return c.json({ reply: body.text ? 'ok' : null, id: 'x' });
  });
  const listening = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const { port } = listening.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => listening.close(() => r())) };
}

/** Sequential requests on one keep-alive connection; milliseconds each. */
async function round(url: string, headers: Record<string, string>): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL('/api/channels/x/messages', url);
  const times: number[] = [];
  for (let i = 0; i < REQUESTS_PER_ROUND; i++) {
    const start = nowMs();
    await new Promise<void>((resolve, reject) => {
      const req = request(
        target,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(BODY),
            ...headers,
          },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(BODY);
    });
    times.push(nowMs() - start);
  }
  agent.destroy();
  return times;
}

interface Served {
  readonly name: string;
  readonly server: { url: string; close: () => Promise<void> };
  readonly headers: Record<string, string>;
}

export async function webGuardBench(): Promise<string> {
  const guards = await compare(
    [
      { name: 'route alone (no guards)', server: await server(), headers: {} },
      { name: 'guarded, loopback, no token', server: await server({}), headers: {} },
      {
        name: 'guarded, bearer token',
        server: await server({ adminToken: TOKEN }),
        headers: { authorization: `Bearer ${TOKEN}` },
      },
    ],
    'p50 ratio to the route alone',
  );
  const spanServers = async (): Promise<Served[]> => [
    { name: 'guarded', server: await server({}), headers: {} },
    { name: 'guarded, with the request span', server: await server({}, true), headers: {} },
  ];
  const off = await compare(await spanServers(), 'p50 ratio to guarded');
  const collector = await FakeOtlpCollector.start();
  const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, SILENT_LOGGER);
  const on = await compare(await spanServers(), 'p50 ratio to guarded');
  await tracing.shutdown();
  const exported = collector.spans.length;
  await collector.close();
  return [
    `${ROUNDS} rounds × ${REQUESTS_PER_ROUND} sequential requests per server over one keep-alive connection, servers alternating.\n`,
    guards,
    '\nThe request span, tracing off (no OTEL variable):\n',
    off,
    `\nThe request span, tracing on (SDK, batched OTLP/HTTP export to a local collector: ${exported} spans received):\n`,
    on,
  ].join('\n');
}

/** The servers' requests, rounds alternating, as a table; the first server is the ratio's base. */
async function compare(servers: readonly Served[], ratioHeader: string): Promise<string> {
  const times = servers.map(() => [] as number[]);
  // One warm-up round each, then alternate.
  for (const s of servers) await round(s.server.url, s.headers);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, s] of servers.entries()) times[i]?.push(...(await round(s.server.url, s.headers)));
  }
  for (const s of servers) await s.server.close();
  const base = median(times[0] ?? []);
  const rows = servers.map((s, i) => {
    const sorted = [...(times[i] ?? [])].sort((a, b) => a - b);
    const p50 = median(sorted);
    return [
      s.name,
      sorted.length,
      p50.toFixed(3),
      percentile(sorted, 0.99).toFixed(3),
      (p50 / base).toFixed(2),
    ];
  });
  return table(['server', 'requests', 'p50 ms', 'p99 ms', ratioHeader], rows);
}
