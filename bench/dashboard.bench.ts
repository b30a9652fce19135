/**
 * The dashboard's API with 1,000 channels of three platforms in the real Postgres: the routes the
 * page calls, through the Hono app with the admin rule in front (a bearer token), as the page sees
 * them minus the network and the admin rule. Each channel holds 20 messages; one has 2,000, two
 * summary spans and two passes in the run store. The load is not timed. `listChannels` is one query
 * for every channel (tokens, last activity and calibration with it); each request gets a fresh
 * source, so the list's 500 ms cache never answers and every sample reads the database.
 */
import { parseConfig } from '@ebb/config';
import { toNewMessage } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { mountDashboard } from '@ebb/web';
import { Hono } from 'hono';
import { StoreDashboardSource } from '../apps/bot/src/dashboard/dashboard-channels.js';
import { DashboardFeed } from '../apps/bot/src/dashboard/dashboard-feed.js';
import { median, nowMs, percentile, table } from './support.js';

const CHANNELS = 1_000;
const MESSAGES = 20;
const BUSY_MESSAGES = 2_000;
const RUNS = 40;

export async function dashboardBench(): Promise<string> {
  const fresh = await freshSchemaDb({ poolSize: 10 });
  try {
    const tokenizer = await loadTokenizer('o200k_base');
    const stores = {
      channels: new PgChannelStore({ db: fresh.db }),
      memories: new PgMemoryStore({ db: fresh.db }),
      runs: new PgRunStore({ db: fresh.db }),
    };
    const platforms = ['slack:T1:C', 'discord:G1:', 'web:'];
    const keys = Array.from({ length: CHANNELS }, (_, i) => `${platforms[i % 3]}bench-${i}`);
    const message = (i: number) =>
      toNewMessage(
        {
          role: 'user',
          author: `user${i % 7}`,
          text: `message ${i}: ${'status update '.repeat(1 + (i % 30))}`,
        },
        tokenizer,
        100_000,
      );
    for (let i = 0; i < keys.length; i += 50)
      await Promise.all(
        keys.slice(i, i + 50).map(async (key) => {
          for (let m = 0; m < MESSAGES; m++) await stores.channels.append(key, message(m));
        }),
      );
    const busy = keys[0] as string;
    for (let m = MESSAGES; m < BUSY_MESSAGES; m++) await stores.channels.append(busy, message(m));
    for (const [n, [from, to]] of [
      [1, 400],
      [401, 1200],
    ].entries()) {
      await stores.runs.create({
        jobId: `bench-${n}`,
        channelKey: busy,
        tier: 'background',
        usage: 0.81,
        fromSeq: from ?? 1,
        toSeq: to ?? 1,
        generation: n,
      });
      await stores.channels.splice(busy, {
        jobId: `bench-${n}`,
        fromSeq: from ?? 1,
        toSeq: to ?? 1,
        text: 'summary '.repeat(100),
        tokens: 200,
      });
      await stores.runs.finish(`bench-${n}`, {
        status: 'completed',
        tokensBefore: 30_000,
        tokensAfter: 8_000,
        durationMs: 2_000,
      });
    }

    const config = parseConfig('', 'bench.toml');
    const feed = new DashboardFeed();
    const app = () => {
      const a = new Hono();
      mountDashboard(a, {
        tokenRequired: true,
        source: new StoreDashboardSource({
          config: () => config,
          ...stores,
          takeBacks: stores.channels.takeBacks,
          feed,
        }),
      });
      return a;
    };
    const encoded = encodeURIComponent(busy);
    const routes: [string, string][] = [
      [`GET /api/dashboard/channels (${CHANNELS.toLocaleString('en')} channels)`, '/api/dashboard/channels'],
      ['GET /api/dashboard/channels/:key', `/api/dashboard/channels/${encoded}`],
      ['GET …/:key/history (newest 50)', `/api/dashboard/channels/${encoded}/history`],
      ['GET …/:key/usage', `/api/dashboard/channels/${encoded}/usage`],
    ];
    const rows: (string | number)[][] = [];
    for (const [label, path] of routes) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < RUNS + 5; i++) {
        const server = app();
        const started = nowMs();
        const res = await server.request(path);
        const body = await res.text();
        const took = nowMs() - started;
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
        bytes = body.length;
        if (i >= 5) times.push(took);
      }
      const sorted = [...times].sort((a, b) => a - b);
      rows.push([
        label,
        median(times).toFixed(1),
        percentile(sorted, 0.99).toFixed(1),
        `${(bytes / 1024).toFixed(0)} KiB`,
      ]);
    }
    return [
      `${CHANNELS.toLocaleString('en')} channels of ${MESSAGES} messages (one of ${BUSY_MESSAGES.toLocaleString('en')} with 2 summary spans and 2 passes), Postgres, ${RUNS} requests each through the Hono app; a fresh source per request, so no cached list.`,
      '',
      table(['route', 'median ms', 'p99 ms', 'body'], rows),
    ].join('\n');
  } finally {
    await fresh.close();
  }
}
