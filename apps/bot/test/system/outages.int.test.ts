/**
 * Redis or Postgres going away under a running bot, through a TCP proxy the test cuts:
 * - Redis down: the bot still answers, and still truncates in an emergency (it needs no queue);
 * - Postgres down: the web API answers 503 (with Retry-After) for what it could not archive, a client
 *   that retries with the same id loses nothing and duplicates nothing, and answers resume once it
 *   is back. (Chat platforms get a short apology instead; see the bot's tests.)
 */
import { loadEnv } from '@ebb/config';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import type { FakeOpenAiServer } from '@ebb/testing/openai';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { postgresBehindProxy } from '../postgres-proxy.js';
import { smallWindowConfig, startAckingModel } from '../small-window.js';

const config = (baseUrl: string) => smallWindowConfig(baseUrl, ['[web.bot]', 'respond_to = "all"']);

let fake: FakeOpenAiServer;
let ebb: RunningEbb | undefined;
const closers: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  fake = await startAckingModel();
});

afterEach(async () => {
  // Shutting down with a service still down must not hang either.
  await ebb?.close();
  ebb = undefined;
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  await fake.close();
}, 30_000);

async function post(text: string, id: string): Promise<string | null> {
  const res = await fetch(`${ebb?.web.url}/api/channels/o/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: 'ana', text, id }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { reply: string | null }).reply;
}

describe('outages', () => {
  it('keeps answering with Redis down, still truncates in an emergency, and runs passes again once it is back', async () => {
    const redisProxy = await TcpProxy.start({
      host: '127.0.0.1',
      port: Number(new URL(redisUrl()).port || 6379),
    });
    closers.push(() => redisProxy.close());
    const fresh = await freshSchemaDb();
    closers.push(() => fresh.close());
    const prefix = randomPrefix();
    closers.push(() => dropPrefix(prefix));
    ebb = await startEbb({
      config: () => config(fake.url),
      env: loadEnv({
        OPENAI_API_KEY: 'k',
        REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
        EBB_REDIS_PREFIX: prefix,
      }),
      logger: createLogger({ level: 'silent' }),
      withWorker: true,
      webPort: 0,
      database: fresh.database,
    });
    expect(ebb.embedded.queue).toBe(false);
    let sent = 0;
    const say = async (i: number) => {
      const text =
        i % 20 === 0
          ? `paste ${i}: ${'ERROR pool exhausted request_id=7 '.repeat(80)}`
          : `update ${i}: all green on service ${i}`;
      sent++;
      expect(await post(text, `r-${i}`)).toMatch(/^ack /);
    };
    await say(0);

    redisProxy.cut();
    const channels = new PgChannelStore({ db: fresh.db });
    let truncated = false;
    let i = 1;
    for (; i <= 300 && !truncated; i++) {
      await say(i);
      truncated = (await channels.loadPrefix('web:o')).spans.some((s) => s.kind === 'truncated');
    }
    expect(truncated).toBe(true);
    // Redis comes back: passes run again, and none is left queued or running.
    redisProxy.restore();
    // Back once the bot's connection is (it reconnects at most 2 s apart); then the channel talks on.
    await vi.waitFor(
      async () => {
        const health = (await (await fetch(`${ebb?.web.url}/healthz`)).json()) as {
          checks: { redis?: { ok: boolean } };
        };
        expect(health.checks.redis?.ok).toBe(true);
      },
      { timeout: 15_000, interval: 100 },
    );
    const restored = Date.now();
    const outageTurns = i - 1;
    const runs = new PgRunStore({ db: fresh.db });
    for (const end = i + 60; i < end; i++) await say(i);
    await vi.waitFor(
      async () => {
        const unfinished = await runs.unfinished({ createdBefore: Date.now() + 60_000, limit: 1_000 });
        expect(unfinished).toEqual([]);
        const after = (await runs.recent('web:o', 1_000)).filter((r) => (r.createdAt ?? 0) >= restored);
        expect(after.some((r) => r.status === 'completed')).toBe(true);
      },
      { timeout: 30_000, interval: 200 },
    );
    const archive = await channels.readArchive('web:o', 1, (await channels.loadPrefix('web:o')).headSeq);
    const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
    console.info(
      `Redis down for ${outageTurns} turns, then back for 60: sent ${sent}, acknowledged ${sent}, archived ${new Set(users).size}, ` +
        `duplicated ${users.length - new Set(users).size}, passes stuck 0`,
    );
    expect(new Set(users).size).toBe(sent);
    expect(users.length).toBe(sent);
    expect(fake.completionRequests.filter((r) => r.fault === 'context_length_exceeded')).toEqual([]);
  }, 90_000);

  it('archives every message a client was told was archived while Postgres goes down and comes back', async () => {
    const pg = await postgresBehindProxy();
    closers.push(() => pg.close());
    const { proxy: pgProxy, fresh } = pg;
    const prefix = randomPrefix();
    closers.push(() => dropPrefix(prefix));
    ebb = await startEbb({
      config: () => config(fake.url),
      env: loadEnv({ OPENAI_API_KEY: 'k', EBB_REDIS_PREFIX: prefix }),
      logger: createLogger({ level: 'silent' }),
      withWorker: false,
      webPort: 0,
      database: fresh.database,
    });

    // A client posting one message after another; on 503 it sends the same message (same id) again.
    const MESSAGES = 60;
    const counts = { sent: MESSAGES, attempts: 0, acknowledged: 0, unavailable: 0, conflicts: 0 };
    let outage: Promise<void> | undefined;
    for (let i = 0; i < MESSAGES; i++) {
      // Postgres goes away for 3 s after the 20th message, mid-conversation.
      if (i === 20) {
        pgProxy.cut();
        outage = new Promise((resolve) => setTimeout(resolve, 3_000)).then(() => pgProxy.restore());
      }
      for (;;) {
        counts.attempts++;
        const res = await fetch(`${ebb.web.url}/api/channels/o/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ author: 'ana', text: `update ${i}`, id: `p-${i}` }),
        });
        const body = (await res.json()) as { reply?: string | null; code?: string };
        if (res.status === 200) {
          counts.acknowledged++;
          break;
        }
        expect([res.status, body.code, res.headers.get('retry-after')]).toEqual([
          503,
          'store_unavailable',
          '5',
        ]);
        counts.unavailable++;
        // The test does not wait the full Retry-After.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await outage;
    const channels = new PgChannelStore({ db: fresh.db });
    const archive = await channels.readArchive('web:o', 1, (await channels.loadPrefix('web:o')).headSeq);
    const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
    const archived = new Set(users).size;
    console.info(
      `Postgres down 3 s (web): sent ${counts.sent}, attempts ${counts.attempts}, 503 ${counts.unavailable}, ` +
        `acknowledged ${counts.acknowledged}, archived ${archived}, duplicated ${users.length - archived}`,
    );
    expect(counts.unavailable).toBeGreaterThan(0);
    expect(counts.acknowledged).toBe(MESSAGES);
    // Every acknowledged message archived once, in the order sent (written out, not rebuilt the way
    // the loop above built the messages).
    // biome-ignore format: ten to a line, so the list reads as what it is
    expect(users).toEqual([
      'update 0', 'update 1', 'update 2', 'update 3', 'update 4', 'update 5', 'update 6', 'update 7', 'update 8', 'update 9',
      'update 10', 'update 11', 'update 12', 'update 13', 'update 14', 'update 15', 'update 16', 'update 17', 'update 18', 'update 19',
      'update 20', 'update 21', 'update 22', 'update 23', 'update 24', 'update 25', 'update 26', 'update 27', 'update 28', 'update 29',
      'update 30', 'update 31', 'update 32', 'update 33', 'update 34', 'update 35', 'update 36', 'update 37', 'update 38', 'update 39',
      'update 40', 'update 41', 'update 42', 'update 43', 'update 44', 'update 45', 'update 46', 'update 47', 'update 48', 'update 49',
      'update 50', 'update 51', 'update 52', 'update 53', 'update 54', 'update 55', 'update 56', 'update 57', 'update 58', 'update 59',
    ]);
    // Answers resumed: the last message got a real reply, archived after it.
    expect(archive.at(-1)).toMatchObject({ role: 'assistant', text: expect.stringMatching(/^ack /) });
  }, 60_000);
});
