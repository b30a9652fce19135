/**
 * A platform that cannot connect at start does not take Ebb down: Discord's API is unreachable
 * (a TCP proxy the test cuts), `startEbb` still comes up, the web channel answers, `/healthz`
 * reports Discord as degraded; once Discord answers again the bot connects by itself and answers
 * there too.
 */
import { loadEnv } from '@ebb/config';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { FakeDiscord } from '@ebb/testing/discord';
import type { FakeOpenAiServer } from '@ebb/testing/openai';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { smallWindowConfig, startAckingModel } from '../small-window.js';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

it('runs the web channel while Discord cannot connect, and connects Discord once it answers', async () => {
  const fake: FakeOpenAiServer = await startAckingModel();
  closers.push(() => fake.close());
  const discord = await FakeDiscord.start();
  closers.push(() => discord.close());
  const restUrl = new URL(discord.restApi);
  const proxy = await TcpProxy.start({ host: restUrl.hostname, port: Number(restUrl.port) });
  closers.push(() => proxy.close());
  proxy.cut();
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());

  const ebb: RunningEbb = await startEbb({
    config: () => smallWindowConfig(fake.url, ['[bot]', 'respond_to = "all"']),
    env: loadEnv({ OPENAI_API_KEY: 'k', DISCORD_TOKEN: discord.token, REDIS_URL: 'redis://127.0.0.1:1' }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
    platformRetry: { initialDelayMs: 100, maxDelayMs: 200 },
    platforms: { discordRestApi: `http://127.0.0.1:${proxy.port}${restUrl.pathname}` },
  });
  closers.push(() => ebb.close());

  const health = async () =>
    (await (await fetch(`${ebb.web.url}/healthz`)).json()) as {
      ok: boolean;
      degraded: Record<string, string>;
    };
  expect(await health()).toMatchObject({ ok: true, degraded: { discord: expect.any(String) } });
  const res = await fetch(`${ebb.web.url}/api/channels/lobby/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: 'ana', text: 'is anyone there?', id: 'w-1' }),
  });
  expect(await res.json()).toMatchObject({ reply: expect.stringMatching(/^ack /) });

  proxy.restore();
  await vi.waitFor(async () => expect((await health()).degraded).toEqual({}), {
    timeout: 20_000,
    interval: 100,
  });
  const alice = discord.createUser({ username: 'alice', globalName: 'Alice' });
  const general = discord.guild.channel('general');
  discord.postMessage({ channel: general, author: alice, content: 'and on Discord?' });
  await vi.waitFor(() => expect(discord.posted.filter((m) => m.channel_id === general.id)).toHaveLength(1), {
    timeout: 10_000,
    interval: 50,
  });
}, 60_000);
