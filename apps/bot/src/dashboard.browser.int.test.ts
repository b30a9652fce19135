/**
 * The dashboard in headless Chromium (Debian's /usr/bin/chromium through playwright-core; CI installs
 * it): Ebb with Postgres, BullMQ and a worker in this process and the fake OpenAI server as the model,
 * a 4,000-token window, and an admin token. One browser context (one sign-in) walks the views in
 * order: the empty state of a fresh database, the loading state (the API held until the screenshot
 * is taken), a web channel driven through the page's own chat form until passes run and an emergency
 * truncates (gauge, history, usage chart, passes, memories all following live), a seeded Slack
 * channel whose history holds a summary span, a truncation marker and microcompaction stubs, the
 * list of channels of every platform, and 1,000 channels paged and filtered.
 *
 * Saves a PNG of each view in test/artifacts/ (dashboard-*.png; dashboard.png is the README's).
 * Waits are for selectors and events, never for time.
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadEnv } from '@ebb/config';
import { type NewMessage, stubToolResults, toNewMessage } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { createRedis } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { freshSchemaDb } from '@ebb/testing/postgres';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { longPaste, passReply, smallWindowConfig } from '../test/small-window.js';
import { type RunningEbb, startEbb } from './start-ebb.js';

const ADMIN_TOKEN = 'dashboard-test-token';
const ARTIFACTS = fileURLToPath(new URL('../test/artifacts/', import.meta.url));
const TYPES = ['fact', 'decision', 'preference', 'person', 'task', 'event'] as const;
let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let ebb: RunningEbb;
let browser: Browser;
let context: BrowserContext;
const prefix = randomPrefix();
const tokenizer = await loadTokenizer('o200k_base');

/** Memories a pass extracts: 14 from the first, 12 others from each later one (more than the 20 shown). */
function memoriesOf(pass: number) {
  const n = pass === 1 ? 14 : 12;
  return Array.from({ length: n }, (_, i) => ({
    type: TYPES[(i + pass) % TYPES.length],
    text:
      i === 0 && pass === 1
        ? 'Upstream resets started with the deploy of build 4127 on the edge proxies; the rollback on Tuesday stopped them, and the incident review asked that every later deploy of the proxies be staged through the canary pool first, watched for half an hour.'
        : `Pass ${pass} memory ${i + 1}: ${['the edge proxies reset upstream connections', 'Ana owns the rollback', 'deploys go through the canary pool', 'alerts page the on-call engineer', 'request 12345 retried three times', 'the incident review is on Friday'][i % 6]}`,
    importance: Math.round((0.95 - i * 0.05 - pass * 0.01) * 100) / 100,
    speaker: 'operator',
    fromSeq: 1,
    toSeq: 1,
  }));
}

beforeAll(async () => {
  fake = await FakeOpenAiServer.start({ contextWindow: 4_000, countTokens: (t) => tokenizer.count(t) });
  let chats = 0;
  let passes = 0;
  fake.reply((request) => {
    const pass = passReply(request, { summary: '', memories: [] }) && ++passes;
    return (
      (pass &&
        passReply(request, {
          summary: `## Incidents\n- upstream resets during the deploy (operator), pass ${pass}.\n## Decisions\n- roll back build 4127; stage proxy deploys through the canary pool.`,
          memories: memoriesOf(pass),
        })) || { content: `ack ${++chats}` }
    );
  });
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
  context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  await mkdir(ARTIFACTS, { recursive: true });
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

/** A page of the signed-in context that fails the test on any script error. */
async function openPage(path: string): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${ebb.web.url}${path}`);
  return { page, errors };
}

const shot = (name: string) => `${ARTIFACTS}${name}.png`;
const message = (text: string, author = 'ana', role: 'user' | 'assistant' | 'tool' = 'user'): NewMessage =>
  toNewMessage({ role, author, text, ts: new Date().toISOString() }, tokenizer, 100_000);

describe('the dashboard in a browser', () => {
  it('keeps the dashboard, its API and the queue board behind the admin token', async () => {
    expect(ebb.embedded.queue).toBe(false);
    for (const path of ['/', '/api/dashboard/channels', '/api/dashboard/events', '/admin/queues'])
      expect((await fetch(`${ebb.web.url}${path}`)).status, path).toBe(401);
    const board = await fetch(`${ebb.web.url}/admin/queues`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(board.status).toBe(200);
    expect(await board.text()).toContain('<div id="root">');
  });

  it('says there are no channels yet on a fresh database (the empty state)', async () => {
    const { page, errors } = await openPage(`/?token=${ADMIN_TOKEN}`);
    // The token went into an HttpOnly cookie and out of the address bar.
    expect(new URL(page.url()).search).toBe('');
    await page.locator('#list-status', { hasText: 'No channels yet' }).waitFor();
    await page.locator('#channel-title', { hasText: 'No channels yet' }).waitFor();
    expect(await page.textContent('#auth-note')).toContain('admin token');
    // Nothing pretends to be a value: no usage figure, no gauge reading.
    expect(await page.isVisible('#usage')).toBe(false);
    await page.locator('#stream-state', { hasText: 'live' }).waitFor();
    await page.screenshot({ path: shot('dashboard-empty') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows placeholders, not values, until the API answers (the loading state)', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const page = await context.newPage();
    let asked = () => {};
    const listAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    await page.route('**/api/dashboard/**', async (route) => {
      if (route.request().url().endsWith('/api/dashboard/channels')) asked();
      await held;
      await route.continue();
    });
    await page.goto(`${ebb.web.url}/?channel=web%3Aops`);
    await listAsked;
    await page.locator('#channels tr.skeleton').first().waitFor();
    expect(await page.textContent('#list-status')).toBe('Loading channels…');
    expect(await page.getAttribute('#channels', 'aria-busy')).toBe('true');
    expect(await page.getAttribute('#channel-panel', 'aria-busy')).toBe('true');
    expect(await page.textContent('#usage')).toBe('usage —');
    await page.screenshot({ path: shot('dashboard-loading') });
    release();
    // The asked-for web channel has no messages yet: its empty state, with the chat form to start it.
    await page.locator('#empty-channel', { hasText: 'No messages yet' }).waitFor();
    expect(await page.isVisible('#chat')).toBe(true);
    await page.close();
  });

  it('follows a web channel live: history, gauge, usage chart with pass marks, passes and memories', async () => {
    const { page, errors } = await openPage('/?channel=web%3Aops');
    await page.locator('#chat').waitFor();
    const historyCount = () => page.locator('#history li[data-seq]').count();
    await page.fill('#chat-text', 'hello from the dashboard');
    await page.click('#chat button');
    await page.locator('#history li[data-seq]', { hasText: 'hello from the dashboard' }).waitFor();
    await page.locator('#history li[data-seq]', { hasText: 'ack 1' }).waitFor();
    await page.locator('#channels a[data-key="web:ops"]').waitFor();
    await page.locator('#usage', { hasText: /^usage \d+\.\d%/ }).waitFor();

    // Pastes until a pass completes (a 4,000-token window: about a dozen).
    for (let sent = 1; sent < 40; sent++) {
      if ((await page.locator('#passes td.completed').count()) > 0) break;
      const before = await historyCount();
      await page.fill(
        '#chat-text',
        `paste ${sent}: ${'ERROR upstream reset request_id=12345 attempt=3 '.repeat(25)}`,
      );
      await page.click('#chat button');
      // The message and its reply, through the live feed, before the next one.
      await expect.poll(historyCount).toBeGreaterThanOrEqual(Math.min(before + 2, 50));
    }
    await page.locator('#passes td.completed').first().waitFor({ timeout: 20_000 });
    const row = await page
      .locator('#passes tr', { has: page.locator('td.completed') })
      .first()
      .innerText();
    expect(row).toMatch(
      /^\d\d:\d\d:\d\d\s+(background|aggressive|emergency)\s+(\d+\.\d%|—)\s+[\d,]+ → [\d,]+\s+\d+\.\d\d s\s+no\s+\d+\s+completed$/,
    );
    // The summary span sits in the history where it is in the context, and expands to its text.
    const span = page.locator('#history li.span.summary').first();
    await span.waitFor();
    await span.locator('details > summary').first().click();
    await span.getByText('roll back build 4127').waitFor();
    await page.locator('#history li.divider').waitFor();

    // Long pastes push usage past the emergency threshold (two are enough unless a pass lands
    // between them): a truncation, marked in the chart.
    const emergencies = page.locator('#chart circle.pass-mark[data-tier="emergency"]');
    for (let i = 1; i <= 6 && (await emergencies.count()) === 0; i++) {
      await page.fill('#chat-text', longPaste(i));
      // The turn is over when the web channel answers the form's post.
      const answered = page.waitForResponse((r) => r.url().endsWith('/api/channels/ops/messages'));
      // The chart is drawn again after the turn's events: wait for the redraw before counting.
      const drawn = page.waitForResponse((r) => r.url().endsWith('/usage'));
      await page.click('#chat button');
      expect((await answered).status()).toBe(200);
      await drawn;
    }
    await emergencies.first().waitFor();
    // The chart: the usage line, four threshold lines (microcompaction is on by default), a mark per pass.
    expect(await page.locator('#chart path.usage-line').count()).toBe(1);
    expect(
      await page
        .locator('#chart line[data-threshold]')
        .evaluateAll((ls) => ls.map((l) => l.getAttribute('data-threshold'))),
    ).toEqual(['microcompact', 'background', 'aggressive', 'emergency']);
    expect(await page.locator('#chart circle.pass-mark').count()).toBeGreaterThanOrEqual(2);
    expect(await page.textContent('#chart desc')).toMatch(/passes \(.*\d+ (background|aggressive)/);

    // Memories: the top 20 of more, by importance, with type badges; the long one expands.
    await page.locator('#memories', { hasText: 'Top 20 of' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('#memories li').count()).toBe(20);
    const importances = await page.locator('#memories .imp').allInnerTexts();
    expect(importances.map((t) => Number(t.replace('importance ', '')))).toEqual(
      [...importances.map((t) => Number(t.replace('importance ', '')))].sort((a, b) => b - a),
    );
    expect(await page.locator('#memories .mtype.fact').count()).toBeGreaterThan(0);
    const long = page.locator('#memories details').first();
    await long.locator('summary').click();
    await long.getByText('watched for half an hour').waitFor();
    expect(await page.getAttribute('#gauge', 'aria-valuenow')).toMatch(/^\d+\.\d$/);

    await page.locator('#chart').scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot('dashboard'), fullPage: true });
    await page
      .locator('#chart-title')
      .locator('..')
      .screenshot({ path: shot('dashboard-usage-chart') });
    // Passes and memories together: the box around both sections.
    const passes = await page.locator('#passes-title').locator('..').boundingBox();
    const memories = await page.locator('#memories-title').locator('..').boundingBox();
    if (!passes || !memories) throw new Error('passes or memories not laid out');
    await page.screenshot({
      path: shot('dashboard-passes-memories'),
      fullPage: true,
      clip: {
        x: passes.x - 4,
        y: passes.y - 4,
        width: Math.max(passes.width, memories.width) + 8,
        height: memories.y + memories.height - passes.y + 8,
      },
    });
    expect(errors).toEqual([]);
    await page.close();
    // The passes the long pastes started end before the next tests look at which channel is newest.
    const runs = new PgRunStore({ db: fresh.db });
    await expect
      .poll(
        async () =>
          (await runs.recent('web:ops', 50)).filter((r) => r.status === 'queued' || r.status === 'running')
            .length,
        { timeout: 20_000 },
      )
      .toBe(0);
  }, 120_000);

  it('shows a channel of another platform with its summary span, truncation marker and stubs in place', {
    timeout: 60_000,
  }, async () => {
    const key = 'slack:T1:CBUILD';
    const channels = new PgChannelStore({ db: fresh.db });
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
    for (let i = 9; i <= 16; i++) await append(message(`chatter ${i}: ${'status update '.repeat(20)}`, 'bo'));
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

    const { page, errors } = await openPage(`/?channel=${encodeURIComponent(key)}`);
    await page.locator('#history li.span.summary').waitFor();
    await page.locator('#history li.span.truncated').waitFor();
    // Messages under a span are there, dimmed and labelled; the raw context starts after the divider.
    expect(await page.locator('#history li.covered.summarized').count()).toBe(8);
    expect(await page.locator('#history li.covered.truncated').count()).toBeGreaterThan(0);
    const stub = page.locator('#history li.tool .stubbox');
    await stub.getByText('build_log').first().waitFor();
    expect(await page.locator('#history li.tool .badge.stub').count()).toBe(1);
    await page.locator('#history li.span.summary > details > summary').click();
    // The truncation marker says what happened, and closes again.
    const marker = page.locator('#history li.span.truncated > details > summary');
    await marker.click();
    await page.getByText('An emergency truncation put a marker').waitFor();
    await marker.click();
    // The summary's own messages open under it.
    await page.locator('#history li.span.summary .covered-box > summary').click();
    await page.locator('#history li.span.summary .covered-list li', { hasText: 'deploy 8' }).waitFor();
    await page.locator('#spans', { hasText: '1 summary span' }).waitFor();
    expect(await page.textContent('#spans')).toMatch(/1 truncation, 1 tool results stubbed/);
    expect(await page.locator('#passes').innerText()).toMatch(/^No passes yet/);
    expect(await page.locator('#memories').innerText()).toMatch(/^No memories yet/);
    await page.locator('.history-block').screenshot({ path: shot('dashboard-history-spans') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('lists every platform busiest first, sorts and filters from the keyboard', async () => {
    const channels = new PgChannelStore({ db: fresh.db });
    const seeded = [
      ['slack:T1:CINCIDENTS', 60],
      ['slack:T1:CRANDOM', 5],
      ['slack:T1:CDEPLOYS:1716200000.000100', 35],
      ['discord:G1:general', 45],
      ['discord:G1:support', 20],
      ['discord:G2:dev', 10],
      ['web:lobby', 1],
      ['web:qa', 25],
    ] as const;
    for (const [key, lines] of seeded)
      await channels.append(
        key,
        message(`${'the proxies reset upstream connections again; '.repeat(lines)}`),
      );
    const { page, errors } = await openPage('/');
    // `/` opens the most recently active channel: the last one seeded.
    await page.locator('#channel-title', { hasText: 'web:qa' }).waitFor();
    await page.locator('#list-status', { hasText: 'Showing 1–10 of 10' }).waitFor();
    const keys = () =>
      page.locator('#channels a[data-key]').evaluateAll((as) => as.map((a) => a.getAttribute('data-key')));
    const usages = await page.locator('#channels .bar span').allInnerTexts();
    expect(usages.map((u) => Number.parseFloat(u))).toEqual(
      usages.map((u) => Number.parseFloat(u)).sort((a, b) => b - a),
    );
    expect(await page.getAttribute('th[data-sort="usage"]', 'aria-sort')).toBe('descending');
    expect(await page.getAttribute('#channels tr[aria-current="true"] a', 'data-key')).toBe('web:qa');
    await page.locator('#list-panel').screenshot({ path: shot('dashboard-channels') });

    // Keyboard: sort by channel, filter to Discord, open one with Enter; focus moves to its heading.
    await page.locator('th[data-sort="key"] button').focus();
    await page.keyboard.press('Enter');
    expect((await keys())[0]).toBe('discord:G1:general');
    await page.selectOption('#platform', 'discord');
    expect(await keys()).toEqual(['discord:G1:general', 'discord:G1:support', 'discord:G2:dev']);
    await page.locator('#channels a[data-key="discord:G1:support"]').focus();
    await page.keyboard.press('Enter');
    await page.locator('#channel-title', { hasText: 'discord:G1:support' }).waitFor();
    expect(
      await page.evaluate(
        () =>
          (globalThis as { document?: { activeElement?: { id?: string } | null } }).document?.activeElement
            ?.id,
      ),
    ).toBe('channel-title');
    expect(new URL(page.url()).searchParams.get('channel')).toBe('discord:G1:support');
    expect(await page.isVisible('#chat')).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('pages through 1,000 channels and filters them', async () => {
    const channels = new PgChannelStore({ db: fresh.db });
    const keys = Array.from({ length: 1_000 }, (_, i) => `discord:G9:bulk-${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50)
      await Promise.all(
        keys
          .slice(i, i + 50)
          .map((key, j) => channels.append(key, message('x '.repeat(1 + ((i + j) % 97) * 20)))),
      );
    const { page, errors } = await openPage('/?channel=discord%3AG9%3Abulk-0007');
    await page.locator('#list-status', { hasText: 'of 1,010' }).waitFor();
    expect(await page.textContent('#list-status')).toMatch(/^Showing 1–50 of 1,010, sorted by usage/);
    expect(await page.locator('#channels tr').count()).toBe(50);
    await page.click('#next');
    expect(await page.textContent('#page-info')).toBe('page 2 of 21');
    await page.fill('#filter', 'bulk-0999');
    expect(await page.locator('#channels a[data-key]').count()).toBe(1);
    await page.fill('#filter', 'no such channel');
    expect(await page.textContent('#list-status')).toBe('No channel matches the filter.');
    await page.fill('#filter', '');
    await page.locator('#channel-title', { hasText: 'discord:G9:bulk-0007' }).waitFor();
    await page.locator('#list-panel').screenshot({ path: shot('dashboard-1000-channels') });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
