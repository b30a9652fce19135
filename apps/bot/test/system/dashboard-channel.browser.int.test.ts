/**
 * The dashboard's channel view in headless Chromium (the world in `test/dashboard-browser.ts`): a web
 * channel driven through the page's own chat form until passes run and an emergency truncates
 * (gauge, history, usage chart, passes, memories all following live), and a seeded Slack channel
 * whose history holds a summary span, a truncation marker and microcompaction stubs. The channel
 * list has its own file, `dashboard-list.browser.int.test.ts`; the suggested settings theirs,
 * `dashboard-suggestion.browser.int.test.ts`.
 *
 * Saves a PNG of each view in test/artifacts/, which git ignores (dashboard, dashboard-usage-chart,
 * -passes-memories, -history-spans); with EBB_UPDATE_SCREENSHOTS=1, dashboard.png also becomes the
 * README's picture (docs/dashboard.png). Waits are for selectors and events, never for time.
 */
import { PgRunStore } from '@ebb/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardBrowser, startDashboardBrowser } from '../dashboard-browser.js';
import { shot, updateReadmeShot } from '../screenshots.js';
import { longPaste } from '../small-window.js';

let world: DashboardBrowser;

beforeAll(async () => {
  world = await startDashboardBrowser();
  await world.signIn();
}, 60_000);

afterAll(async () => {
  await world?.close();
});

describe('a channel of the dashboard in a browser', () => {
  it('follows a web channel live: history, gauge, usage chart with pass marks, passes and memories', async () => {
    const { page, errors } = await world.openPage('/?channel=web%3Aops');
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
    // The tokens shown are the ones usage is computed from: the provider's count (calibrated).
    const shown = /^([\d,]+) of ([\d,]+) tokens as the provider counts them/.exec(
      (await page.textContent('#tokens')) ?? '',
    );
    const percent = Number(/^usage (\d+\.\d)%/.exec((await page.textContent('#usage')) ?? '')?.[1]);
    const [used, budget] = [shown?.[1], shown?.[2]].map((n) => Number(n?.replaceAll(',', '')));
    expect(Math.abs((100 * (used ?? 0)) / (budget ?? 1) - percent)).toBeLessThanOrEqual(0.1);
    // What the channel's model calls took today, as ebb status says it (no [prices] for the model here).
    await page
      .locator('#cost', {
        hasText: /^last 24 hours: \d+ model calls, [\d,]+ prompt tokens \(\d+\.\d% of reply prompts cached/,
      })
      .waitFor();
    expect(await page.textContent('#cost')).toMatch(/cost unknown: no \[prices\] for gpt-5\.4-mini/);
    // The first reply found the cache cold (nothing before it), so the share is never 0.
    expect(await page.textContent('#cost')).toMatch(
      / · \d+ repl(y|ies), [1-9]\d*\.\d% after the cache went cold$/,
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

    // Memories: the top 20 of more, by importance, with type badges (the long one expands below). They
    // need a second pass. When none landed between the long pastes (a loaded machine), the truncation's
    // heal is it, and a heal waits for messages after the marker: short ones, each answered, until it lands.
    const twoPasses = page.locator('#memories', { hasText: 'Top 20 of' });
    for (let i = 1; i <= 8 && (await twoPasses.count()) === 0; i++) {
      await page.fill('#chat-text', `after the truncation ${i}`);
      const answered = page.waitForResponse((r) => r.url().endsWith('/api/channels/ops/messages'));
      await page.click('#chat button');
      expect((await answered).status()).toBe(200);
    }
    await twoPasses.waitFor({ timeout: 20_000 });
    expect(await page.locator('#memories li').count()).toBe(20);
    const importances = await page.locator('#memories .imp').allInnerTexts();
    expect(importances.map((t) => Number(t.replace('importance ', '')))).toEqual(
      [...importances.map((t) => Number(t.replace('importance ', '')))].sort((a, b) => b - a),
    );
    expect(await page.locator('#memories .mtype.fact').count()).toBeGreaterThan(0);
    expect(await page.getAttribute('#gauge', 'aria-valuenow')).toMatch(/^\d+\.\d$/);
    // Suggested settings were asked for when the first message made the channel: too little history
    // then, an answer the bot serves for 10 minutes. The page asks again once the channel holds the
    // messages that answer said it needs, which a loaded machine can reach here (its slower passes
    // need more messages above): then the answer is a replay of them (dashboard-suggestion.browser.int.test.ts
    // has channels with enough).
    await page.locator('#suggestion[aria-busy="false"] .lead').waitFor();
    const lead = await page.locator('#suggestion .lead').innerText();
    const tooLittle =
      /^Too little history to tune from: ([12]) messages? archived; a suggestion needs about ([\d,]+) at this channel's pace/.exec(
        lead,
      );
    const head = Number((await page.locator('#history li[data-seq]').last().getAttribute('data-seq')) ?? 0);
    if (tooLittle === null) expect(lead).toMatch(/^These settings replay its last [\d,]+ messages/);
    else expect(head).toBeLessThan(Number(tooLittle[2]?.replaceAll(',', '')));

    // The passes the long pastes started end before the world closes under them; once the last has
    // spliced, the list's row shows the usage the overview shows (it kept the last turn's usage, from
    // before the splice, until its 15 s refresh).
    const runs = new PgRunStore({ db: world.fresh.db });
    await expect
      .poll(
        async () =>
          (await runs.recent('web:ops', 50)).filter((r) => r.status === 'queued' || r.status === 'running')
            .length,
        { timeout: 20_000 },
      )
      .toBe(0);
    const listed = page.locator('#channels tr[data-row="web:ops"] .bar span');
    await expect
      .poll(async () => `${await listed.innerText()} in the list, ${await page.textContent('#usage')}`, {
        timeout: 5_000,
      })
      .toMatch(/^(\d+\.\d%) in the list, usage \1/);
    // The long memory expands, now that no pass or turn draws the memories again (which closes it).
    const long = page.locator('#memories details').first();
    await long.locator('summary').click();
    await long.getByText('watched for half an hour').waitFor();

    await page.locator('#chart').scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot('dashboard'), fullPage: true });
    await updateReadmeShot('dashboard');
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
  }, 120_000);

  it('shows a channel of another platform with its summary span, truncation marker and stubs in place', {
    timeout: 60_000,
  }, async () => {
    const key = 'slack:T1:CBUILD';
    await world.seedBuildChannel(key);
    const { page, errors } = await world.openPage(`/?channel=${encodeURIComponent(key)}`);
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
});
