/**
 * The dashboard's "Suggested settings" panel in headless Chromium (the world in
 * `test/dashboard-browser.ts`), on channels whose archives hold real traffic and recorded passes: the
 * bursty channel of `ebb simulate --suggest`'s tests (an 8,000-token window, priced models) gets its
 * table and block; the same traffic with passes of 60 s gets the closest setting and what would reach
 * 0 emergencies; a quiet channel is told how much history it needs. What the panel shows is checked
 * against the route's own answer (`GET …/suggestion`), which the bot computes on its stores.
 *
 * Saves test/artifacts/dashboard-suggestion.png and -suggestion-none.png (git ignores them). Waits are
 * for selectors and requests, never for time.
 */
import { PgRunStore } from '@ebb/db';
import type { DashboardSuggestion } from '@ebb/web';
import type { Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BURSTY_CONFIG, BURSTY_PASS_MS, burstyTraffic, recordPasses } from '../bursty-traffic.js';
import { type DashboardBrowser, startDashboardBrowser } from '../dashboard-browser.js';
import { shot } from '../screenshots.js';

const BURSTY = 'slack:T1:CBURSTY';
const SLOW = 'slack:T1:CSLOW';
const QUIET = 'slack:T1:CQUIET';

/**
 * The bursty fixture's config for the Slack channels (the world's web channels keep the small window):
 * its window, models and prices, and back to the defaults the small window's file sets otherwise.
 */
const SLACK_AS_BURSTY = [
  '[channels."slack:T1:*".llm]',
  'context_window = 8000',
  'max_output_tokens = 1000',
  '[channels."slack:T1:*".compaction]',
  'summarizer_model = "gpt-5.4-nano"',
  'protect_recent = 10',
  'cooldown_seconds = 10',
  'summary_max_tokens = 640',
  '[channels."slack:T1:*".memory]',
  'recall_max_tokens = 1000',
  ...BURSTY_CONFIG.split('\n').slice(BURSTY_CONFIG.split('\n').indexOf('[prices."gpt-5.4-mini"]')),
];

let world: DashboardBrowser;

/** A channel with the bursty traffic and passes that took `passMs` each, as the bot records them. */
async function seedBursty(key: string, passMs: readonly number[]): Promise<void> {
  const traffic = burstyTraffic();
  for (let i = 0; i < traffic.length; i += 400)
    await world.channels.appendAll(key, traffic.slice(i, i + 400));
  await recordPasses(new PgRunStore({ db: world.fresh.db }), key, passMs);
}

beforeAll(async () => {
  world = await startDashboardBrowser({ extra: SLACK_AS_BURSTY });
  await world.signIn();
  await seedBursty(BURSTY, BURSTY_PASS_MS);
  await seedBursty(
    SLOW,
    Array.from({ length: 10 }, () => 60_000),
  );
  for (let i = 0; i < 30; i++) await world.channels.append(QUIET, world.message(`hello ${i}`));
}, 120_000);

afterAll(async () => {
  await world?.close();
});

/** The route's answer, as the page's own session asks for it (served from the bot's cache once computed). */
async function routeAnswer(page: Page, key: string): Promise<DashboardSuggestion> {
  const res = await page.request.get(
    `${world.ebb.web.url}/api/dashboard/channels/${encodeURIComponent(key)}/suggestion`,
  );
  expect(res.status()).toBe(200);
  return (await res.json()) as DashboardSuggestion;
}

/** The panel's table: its headings, then each row's cells by the row's name. */
async function panelTable(page: Page) {
  const head = await page.locator('#suggestion thead th').allInnerTexts();
  const rows = await page
    .locator('#suggestion tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent?.trim() ?? '')));
  return { head, rows: Object.fromEntries(rows.map(([name, ...cells]) => [name, cells])) };
}

const emergencies = (n: number) => `${n} emergenc${n === 1 ? 'y' : 'ies'}`;

const settled = (page: Page) => page.locator('#suggestion[aria-busy="false"]').waitFor({ timeout: 60_000 });

describe('suggested settings on a channel of the dashboard', () => {
  it('shows the table and the block for a bursty channel, computing apart from the rest of the page', {
    timeout: 120_000,
  }, async () => {
    const page = await world.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    // The suggestion's request is held until the rest of the channel has been drawn: the page must
    // not wait for it. It then goes to the bot unchanged.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/suggestion', async (route: Route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${world.ebb.web.url}/?channel=${encodeURIComponent(BURSTY)}`);
    await page.locator('#history li[data-seq]').first().waitFor();
    await page.locator('#passes td.completed').first().waitFor();
    await page.locator('#usage', { hasText: /^usage \d+\.\d%/ }).waitFor();
    expect(await page.getAttribute('#suggestion', 'aria-busy')).toBe('true');
    expect(await page.locator('#suggestion').innerText()).toMatch(
      /^Replaying this channel's last 20,000 messages at most, with every candidate setting/,
    );
    release();
    await settled(page);
    const s = await routeAnswer(page, BURSTY);
    if (s.status !== 'suggested' || s.suggested === null || s.block === null)
      throw new Error(`expected a suggestion with a block, got ${JSON.stringify(s)}`);
    expect(s.current.emergencies).toBeGreaterThan(0);
    expect(s.suggested.outcome.emergencies).toBe(0);
    const { current, suggested } = { current: s.current, suggested: s.suggested.outcome };

    expect(await page.locator('#suggestion .lead').innerText()).toBe(
      `These settings replay its last 2,400 messages with 0 emergencies (the current ones: ${current.emergencies}), ` +
        `at $${suggested.costPerThousand?.toFixed(4)} instead of $${current.costPerThousand?.toFixed(4)} per 1,000 messages.`,
    );
    const table = await panelTable(page);
    expect(table.head).toEqual(['current', 'suggested']);
    const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
    expect(table.rows).toEqual({
      emergencies: [String(current.emergencies), '0'],
      'passes (background / aggressive / heals)': [current, suggested].map(
        (o) => `${o.passes.background} / ${o.passes.aggressive} / ${o.passes.heals}`,
      ),
      'peak usage': [pct(current.peakUsage), pct(suggested.peakUsage)],
      'cacheable share of reply prompts': [pct(current.cacheableShare), pct(suggested.cacheableShare)],
      'cost per 1,000 messages': [current, suggested].map((o) => `$${o.costPerThousand?.toFixed(4)}`),
    });
    expect(await page.locator('#suggestion td.bad').count()).toBe(1);
    expect(await page.locator('#suggestion td.good').count()).toBe(1);
    // The block, exactly as the route gives it, and a button that copies it.
    expect(await page.locator('#suggestion pre.toml').textContent()).toBe(s.block);
    expect(s.block).toMatch(/^\[channels\."slack:T1:CBURSTY"\.compaction\]\n\w+ = /);
    await page.locator('#suggestion').scrollIntoViewIfNeeded();
    await page
      .locator('#suggestion-title')
      .locator('..')
      .screenshot({ path: shot('dashboard-suggestion') });
    await world.context.grantPermissions(['clipboard-read', 'clipboard-write'], {
      origin: world.ebb.web.url,
    });
    await page.click('#suggestion button.copy');
    await page.locator('#suggestion button.copy', { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(s.block);
    const notes = await page.locator('#suggestion > p.note').allInnerTexts();
    expect(notes[0]).toBe(
      'Replayed its last 2,400 messages with passes of 7.3 s (the 90th percentile of its 10 recorded passes; median 7 s).',
    );
    expect(notes[1]).toMatch(
      /^Computed at \d\d:\d\d:\d\d, from the messages archived then; the same answer is served until \d\d:\d\d:\d\d\.$/,
    );
    expect(notes[2]).toBe(
      `Searched ${s.search.candidates} settings (${s.search.refused} refused by ebb config check) in ` +
        `${s.search.reads} reads of the archive, ${s.search.replays} replays, ${(s.search.ms / 1000).toFixed(1)} s.`,
    );

    // Another channel, chosen in the list: the same traffic with passes of 60 s reaches no 0.
    await page.click(`#channels a[data-key="${SLOW}"]`);
    await page.locator('#suggestion .lead', { hasText: /^No setting reaches 0 emergencies/ }).waitFor({
      timeout: 60_000,
    });
    const slow = await routeAnswer(page, SLOW);
    if (slow.status !== 'suggested') throw new Error(`expected a report, got ${slow.status}`);
    expect(slow.suggested).toBeNull();
    expect(await page.locator('#suggestion .lead').innerText()).toBe(
      `No setting reaches 0 emergencies at this channel's burst rate with passes of 60 s; the closest has ${emergencies(slow.closest?.outcome.emergencies ?? -1)}.`,
    );
    expect((await panelTable(page)).head).toEqual(['current', 'closest']);
    const would = await page.locator('#suggestion .would li').allInnerTexts();
    expect(would[0]).toMatch(/^The closest (sets \w+ = [\d.]+|is the channel's own settings)/);
    expect(would.slice(1)).toEqual(
      slow.whatWould.map(
        (w) =>
          `With ${w.change}: ${emergencies(w.outcome.emergencies)}${w.outcome.emergencies === 0 ? ' (this would)' : ''}.`,
      ),
    );
    expect(would[1]).toMatch(/^With context_window = 16000: /);
    expect(await page.locator('#suggestion pre').count()).toBe(0);
    await page
      .locator('#suggestion-title')
      .locator('..')
      .screenshot({ path: shot('dashboard-suggestion-none') });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('tells a quiet channel how much history it needs', async () => {
    const { page, errors } = await world.openPage(`/?channel=${encodeURIComponent(QUIET)}`);
    await settled(page);
    const s = await routeAnswer(page, QUIET);
    if (s.status !== 'too_little_history') throw new Error(`expected too little history, got ${s.status}`);
    expect(await page.locator('#suggestion .lead').innerText()).toBe(
      `Too little history to tune from: 30 messages archived; a suggestion needs about ${s.neededMessages.toLocaleString('en')} at this channel's pace (enough traffic for its replay to compact more than once).`,
    );
    expect(await page.locator('#suggestion table').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});
