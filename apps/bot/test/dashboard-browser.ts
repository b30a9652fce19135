/**
 * The world the dashboard's browser tests run in: Ebb with Postgres (a fresh schema), BullMQ (a
 * random prefix) and a worker in this process, the fake OpenAI server as the model (replies
 * `ack 1`, `ack 2`, …; every pass a summary and more memories than the 20 shown), a 4,000-token
 * window, an admin token, and headless Chromium (Debian's /usr/bin/chromium through playwright-core;
 * CI installs it) with one browser context (signed in once, by `signIn` or a test's first page). One
 * per test file, so each has its own schema: start it in `beforeAll`, `close` it in `afterAll`.
 *
 * Screenshots go to test/artifacts/, which git ignores (`shot('dashboard-…')`, see screenshots.ts).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, loadEnv } from '@ebb/config';
import { type NewMessage, stubToolResults, toNewMessage } from '@ebb/core';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { startEbb } from '../src/start-ebb.js';
import { ARTIFACTS } from './screenshots.js';
import { passReply, smallWindowToml } from './small-window.js';

export const ADMIN_TOKEN = 'dashboard-test-token';
const TYPES = ['fact', 'decision', 'preference', 'person', 'task', 'event'] as const;

/**
 * Memories a pass extracts: 14 from the first, 12 others from each later one (more than the 20 shown),
 * each naming `seq`, a message the pass summarizes (one that names none is not kept).
 */
function memoriesOf(pass: number, seq: number) {
  const n = pass === 1 ? 14 : 12;
  return Array.from({ length: n }, (_, i) => ({
    type: TYPES[(i + pass) % TYPES.length],
    text:
      i === 0 && pass === 1
        ? 'Upstream resets started with the deploy of build 4127 on the edge proxies; the rollback on Tuesday stopped them, and the incident review asked that every later deploy of the proxies be staged through the canary pool first, watched for half an hour.'
        : `Pass ${pass} memory ${i + 1}: ${['the edge proxies reset upstream connections', 'Ana owns the rollback', 'deploys go through the canary pool', 'alerts page the on-call engineer', 'request 12345 retried three times', 'the incident review is on Friday'][i % 6]}`,
    importance: Math.round((0.95 - i * 0.05 - pass * 0.01) * 100) / 100,
    speaker: 'operator',
    fromSeq: seq,
    toSeq: seq,
  }));
}

export type DashboardBrowser = Awaited<ReturnType<typeof startDashboardBrowser>>;

/** The first message a summary request shows (`[#seq] author: …`), 1 when it shows none. */
function firstSeq(request: RecordedRequest): number {
  const user = String(request.body.messages[1]?.content ?? '');
  return Number(/^\[#(\d+)\]/m.exec(user)?.[1] ?? 1);
}

/**
 * `extra`: lines added to the config file (the world's Ebb reads it from disk, as `ebb start` does: the
 * suggestion checks its candidates against that file).
 */
export async function startDashboardBrowser(options: { readonly extra?: readonly string[] } = {}) {
  const tokenizer = await loadTokenizer('o200k_base');
  const prefix = randomPrefix();
  const fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
  let chats = 0;
  let passes = 0;
  fake.reply((request) => {
    const pass = passReply(request, { summary: '', memories: [] }) && ++passes;
    return (
      (pass &&
        passReply(request, {
          summary: `## Incidents\n- upstream resets during the deploy (operator), pass ${pass}.\n## Decisions\n- roll back build 4127; stage proxy deploys through the canary pool.`,
          memories: memoriesOf(pass, firstSeq(request)),
        })) || { content: `ack ${++chats}` }
    );
  });
  const fresh = await freshSchemaDb();
  const dir = await mkdtemp(join(tmpdir(), 'ebb-dashboard-'));
  const file = join(dir, 'config.toml');
  await writeFile(
    file,
    smallWindowToml(fake.url, ['[web.bot]', 'respond_to = "all"', ...(options.extra ?? [])]),
  );
  const config = await loadConfig({ path: file, env: {} });
  const ebb = await startEbb({
    config: () => config,
    env: loadEnv({
      OPENAI_API_KEY: 'test-key',
      EBB_REDIS_PREFIX: prefix,
      EBB_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: 'silent',
    }),
    logger: createLogger({ level: process.env.DEBUG_LOG ? 'info' : 'silent' }),
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
    llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
  });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  await mkdir(ARTIFACTS, { recursive: true });
  const channels = new PgChannelStore({ db: fresh.db });

  /** A message as an adapter would archive it, written to the store directly. */
  const message = (text: string, author = 'ana', role: 'user' | 'assistant' | 'tool' = 'user'): NewMessage =>
    toNewMessage({ role, author, text, ts: new Date().toISOString() }, tokenizer, 100_000);

  return {
    ebb,
    fresh,
    context,
    channels,
    message,

    /**
     * Signs the browser context in as a user does, opening a page once with `?token=` (traded for a
     * session cookie); the list's tests do it through their first page, as they test it.
     */
    async signIn(): Promise<void> {
      const page = await context.newPage();
      const response = await page.goto(`${ebb.web.url}/?token=${ADMIN_TOKEN}`);
      expect(response?.status()).toBe(200);
      await page.close();
    },

    /** A page of the browser context that fails the test on any script error. */
    async openPage(path: string): Promise<{ page: Page; errors: string[] }> {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await page.goto(`${ebb.web.url}${path}`);
      return { page, errors };
    },

    /**
     * A Slack channel whose history holds every kind of span: builds 1–8 under a summary, chatter
     * 9–16 partly set aside by an emergency truncation, and a tool call whose result is stubbed.
     */
    async seedBuildChannel(key: string): Promise<void> {
      const append = (m: NewMessage) => channels.append(key, m);
      for (let i = 1; i <= 8; i++)
        await append(message(`deploy ${i}: build 41${20 + i} went out to the canary pool`));
      await channels.splice(key, {
        jobId: 'seeded-pass-1',
        fromSeq: 1,
        toSeq: 8,
        text: '## Deploys\n- builds 4121–4128 went out through the canary pool, no incident.',
        tokens: 30,
      });
      for (let i = 9; i <= 16; i++)
        await append(message(`chatter ${i}: ${'status update '.repeat(20)}`, 'bo'));
      await channels.truncate(key, { fraction: 0.5, protectRecent: 4, markerTokens: 20 });
      const call = { id: 'call_1', name: 'build_log', arguments: '{"build":4129}' };
      await append(
        toNewMessage({ role: 'assistant', author: 'ebb', text: '', toolCalls: [call] }, tokenizer, 100_000),
      );
      await append(
        toNewMessage(
          {
            role: 'tool',
            author: 'build_log',
            toolCallId: 'call_1',
            text: `build 4129 failed\n${'step ok: compile module\n'.repeat(300)}`,
          },
          tokenizer,
          100_000,
        ),
      );
      await append(message('ebb, why did 4129 fail?'));
      await append(message('Build 4129 failed at the link step.', 'ebb', 'assistant'));
      const view = await channels.loadContext(key);
      const tool = view.raw.find((m) => m.role === 'tool');
      expect(tool).toBeDefined();
      const stubbed = await channels.stubToolResults(key, {
        expectedGeneration: view.generation,
        stubs: stubToolResults(view.raw, [tool?.seq ?? 0], tokenizer),
      });
      expect(stubbed.kind).toBe('stubbed');
    },

    async close(): Promise<void> {
      await browser.close();
      await ebb.close();
      await dropPrefix(prefix);
      await fresh.close();
      await fake.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
