/**
 * The dashboard in headless Chromium (Debian's /usr/bin/chromium through playwright-core; CI installs
 * it): Ebb with Postgres, BullMQ and a worker in this process and the fake OpenAI server as the model,
 * a 4,000-token window, and an admin token. Messages go in through the page's own chat form until a
 * pass runs; the gauge, the chat and the timeline must follow. Saves test/artifacts/dashboard.png.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadEnv } from '@ebb/config';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { createRedis } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { freshSchemaDb } from '@ebb/testing/postgres';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { passReply, smallWindowConfig } from '../test/small-window.js';
import { type RunningEbb, startEbb } from './start-ebb.js';

const ADMIN_TOKEN = 'dashboard-test-token';
const ARTIFACTS = fileURLToPath(new URL('../test/artifacts/', import.meta.url));
let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let ebb: RunningEbb;
let browser: Browser;
const prefix = randomPrefix();

beforeAll(async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
  let chats = 0;
  fake.reply(
    (request) =>
      passReply(request, {
        summary: '## Incidents\n- upstream resets during the deploy (ana).',
        memories: [
          {
            type: 'fact',
            text: 'Upstream resets started with the deploy',
            importance: 0.8,
            // The dashboard's chat form posts as "operator": a speaker must be an author of the pass.
            speaker: 'operator',
            fromSeq: 1,
            toSeq: 1,
          },
        ],
      }) ?? { content: `ack ${++chats}` },
  );
  fresh = await freshSchemaDb();
  const config = smallWindowConfig(fake.url, ['[web.bot]', 'respond_to = "all"']);
  ebb = await startEbb({
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
    llmRetry: { attempts: 2, baseDelayMs: 5, maxDelayMs: 10 },
  });
  browser = await chromium.launch({
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
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await ebb?.close();
  const redis = createRedis(redisUrl(), { role: 'producer' });
  await vi.waitFor(() => expect(redis.status).toBe('ready'));
  await cleanupPrefix(redis, prefix);
  await redis.quit();
  await fresh?.close();
  await fake?.close();
});

describe('the dashboard in a browser', () => {
  it('keeps the dashboard and the queue board behind the admin token', async () => {
    expect(ebb.embedded.queue).toBe(false);
    expect((await fetch(`${ebb.web.url}/`)).status).toBe(401);
    expect((await fetch(`${ebb.web.url}/api/dashboard/channels`)).status).toBe(401);
    expect((await fetch(`${ebb.web.url}/admin/queues`)).status).toBe(401);
    const board = await fetch(`${ebb.web.url}/admin/queues`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(board.status).toBe(200);
    expect(await board.text()).toContain('<div id="root">');
  });

  it('shows a posted message, moves the gauge and shows a pass in the timeline', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${ebb.web.url}/?token=${ADMIN_TOKEN}&channel=ops`);
    // The token went into an HttpOnly cookie and out of the address bar.
    expect(new URL(page.url()).search).toBe('?channel=ops');
    await expect.poll(() => page.textContent('#channel-key')).toBe('web:ops');
    expect(await page.textContent('#auth-note')).toContain('admin token');

    const gaugeWidth = () =>
      page.$eval('#gauge-fill', (e) => Number.parseFloat((e as { style: { width: string } }).style.width));
    await page.fill('#chat input[name=text]', 'hello from the dashboard');
    await page.click('#chat button');
    await page.getByText('hello from the dashboard').waitFor();
    await page.getByText('ack 1').waitFor();
    await expect.poll(gaugeWidth).toBeGreaterThan(0);
    const first = await gaugeWidth();

    // Long pastes until a pass completes (a 4,000-token window: about a dozen).
    let sent = 1;
    for (; sent < 40; sent++) {
      if ((await page.locator('#timeline td.completed').count()) > 0) break;
      const before = await page.locator('#messages li').count();
      await page.fill(
        '#chat input[name=text]',
        `paste ${sent}: ${'ERROR upstream reset request_id=12345 attempt=3 '.repeat(25)}`,
      );
      await page.click('#chat button');
      // Wait for the message and its reply from the stream before the next one.
      await expect.poll(() => page.locator('#messages li').count()).toBeGreaterThanOrEqual(before + 2);
      if (sent === 3) await expect.poll(gaugeWidth).toBeGreaterThan(first);
    }
    await page.locator('#timeline td.completed').first().waitFor({ timeout: 20_000 });
    const row = await page
      .locator('#timeline tr', { has: page.locator('td.completed') })
      .first()
      .innerText();
    expect(row).toMatch(/^(background|aggressive|emergency)\s+\d+ → \d+\s+\d+\.\d\d s\s+completed$/);
    // The gauge fell back and the spans count shows the summary.
    await expect.poll(() => page.textContent('#spans')).toMatch(/^[1-9]\d* summary spans? \(/);
    expect(await page.locator('#gauge .mark').count()).toBe(3);
    // The memory the pass extracted is listed with the channel.
    await expect
      .poll(() => page.textContent('#memories'))
      .toContain('(fact, operator) Upstream resets started with the deploy');
    expect(await page.textContent('#gauge-marks')).toBe(
      'marks: background 80% · aggressive 85% · emergency 95%',
    );
    expect(errors).toEqual([]);

    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: `${ARTIFACTS}dashboard.png`, fullPage: true });
    await page.close();
  }, 120_000);
});
