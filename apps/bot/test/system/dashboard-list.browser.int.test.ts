/**
 * The dashboard's channel list in headless Chromium (the world in `test/dashboard-browser.ts`): the
 * admin token in front of it all, the empty state of a fresh database, the loading state (the API
 * held until the screenshot is taken), the list of channels of every platform, and 1,000 channels
 * paged and filtered. A channel's own view has its own file, `dashboard-channel.browser.int.test.ts`.
 *
 * Saves a PNG of each view in test/artifacts/, which git ignores (dashboard-empty, -loading, -channels,
 * -1000-channels). Waits are for selectors and events, never for time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type DashboardBrowser, startDashboardBrowser } from '../dashboard-browser.js';
import { shot } from '../screenshots.js';

let world: DashboardBrowser;

beforeAll(async () => {
  world = await startDashboardBrowser();
}, 60_000);

afterAll(async () => {
  await world?.close();
});

describe('the channel list of the dashboard in a browser', () => {
  it('keeps the dashboard, its API and the queue board behind the admin token', async () => {
    expect(world.ebb.embedded.queue).toBe(false);
    for (const path of ['/', '/api/dashboard/channels', '/api/dashboard/events', '/admin/queues'])
      expect((await fetch(`${world.ebb.web.url}${path}`)).status, path).toBe(401);
    const board = await fetch(`${world.ebb.web.url}/admin/queues`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(board.status).toBe(200);
    expect(await board.text()).toContain('<div id="root">');
  });

  it('says there are no channels yet on a fresh database (the empty state)', async () => {
    const { page, errors } = await world.openPage(`/?token=${ADMIN_TOKEN}`);
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
    const page = await world.context.newPage();
    let asked = () => {};
    const listAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    await page.route('**/api/dashboard/**', async (route) => {
      if (route.request().url().endsWith('/api/dashboard/channels')) asked();
      await held;
      await route.continue();
    });
    await page.goto(`${world.ebb.web.url}/?channel=web%3Aops`);
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

  it('lists every platform busiest first, sorts and filters from the keyboard', async () => {
    const { channels } = world;
    // First the two channels the channel view's tests make (in their own schema), so the list holds
    // the same ten: web:ops as its chat form leaves it (18 messages, usage about 73%, past no
    // threshold) and the Slack builds.
    const ops = [
      world.message('hello from the dashboard', 'operator'),
      world.message('ack 1', 'ebb', 'assistant'),
    ];
    for (let i = 1; i <= 8; i++)
      ops.push(
        world.message(
          `paste ${i}: ${'ERROR upstream reset request_id=12345 attempt=3 '.repeat(22)}`,
          'operator',
        ),
        world.message(`ack ${i + 1}`, 'ebb', 'assistant'),
      );
    for (const m of ops) await channels.append('web:ops', m);
    await world.seedBuildChannel('slack:T1:CBUILD');
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
        world.message(`${'the proxies reset upstream connections again; '.repeat(lines)}`),
      );
    // The API answers the page's requests made together with one read of the list (for 500 ms):
    // the page opens once that read is one made after the seeding, not the loading state's.
    const listed = async () => {
      const response = await world.context.request.get(`${world.ebb.web.url}/api/dashboard/channels`);
      return ((await response.json()) as { channels: unknown[] }).channels.length;
    };
    await expect.poll(listed).toBe(seeded.length + 2);
    const { page, errors } = await world.openPage('/');
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
    const { channels } = world;
    const keys = Array.from({ length: 1_000 }, (_, i) => `discord:G9:bulk-${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50)
      await Promise.all(
        keys
          .slice(i, i + 50)
          .map((key, j) => channels.append(key, world.message('x '.repeat(1 + ((i + j) % 97) * 20)))),
      );
    const { page, errors } = await world.openPage('/?channel=discord%3AG9%3Abulk-0007');
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
