/**
 * The selected channel's overview (gauge, tokens, spans, the take-backs still pending, the last day's
 * cost), passes and memories.
 */
import type { DashboardChannelDetail, DashboardCost } from '../dashboard-api.js';
import { $, clock, el, num, pct, plural, thresholdList } from './dom.js';
import { spendLimitsText, takeBacksText } from './format.js';

const MEMORY_SHOWN = 160;

export function drawOverview(d: DashboardChannelDetail): void {
  const thresholds = thresholdList(d.thresholds);
  $('channel-title').textContent = d.key;
  const fill = $('gauge-fill');
  fill.style.width = `${Math.min(100, d.usage * 100)}%`;
  fill.className = `fill ${d.reached}`;
  const gauge = $('gauge');
  gauge.setAttribute('aria-valuenow', (d.usage * 100).toFixed(1));
  gauge.setAttribute('aria-valuetext', `${pct(d.usage)} of the prompt budget`);
  for (const m of gauge.querySelectorAll('.mark')) m.remove();
  for (const [name, at] of thresholds)
    gauge.append(
      el('div', { class: 'mark', style: `left:${at * 100}%`, title: `${name} ${Math.round(at * 100)}%` }),
    );
  $('usage').textContent = `usage ${pct(d.usage)}${d.reached === 'none' ? '' : ` (past ${d.reached})`}`;
  const t = d.tokens;
  $('tokens').textContent =
    `${num(t.provider)} of ${num(t.budget)} tokens as the provider counts them (${num(t.reserved)} reserved` +
    `${t.calibration === 1 ? '' : `, our count × ${t.calibration.toFixed(2)}`}) · ${num(d.messages)} messages archived, ` +
    `${num(d.inContext)} raw in the context · thresholds ` +
    thresholds.map(([n, a]) => `${n} ${Math.round(a * 100)}%`).join(', ');
  const s = d.spans;
  $('spans').textContent =
    `${plural(s.summaries, 'summary span')} (${num(s.summaryTokens)} tokens), ${plural(s.truncations, 'truncation')}` +
    (d.microcompaction
      ? `, ${d.microcompaction.stubbed} tool results stubbed (${num(d.microcompaction.tokensSaved)} tokens saved)`
      : '');
  const takeBacks = $('take-backs');
  takeBacks.textContent = takeBacksText(d.takeBacks, Date.now());
  takeBacks.hidden = d.takeBacks.pending === 0;
  $('cost').textContent = `last 24 hours: ${lastDay(d.lastDay)}`;
  const budget = $('budget');
  budget.textContent = `spend limits: ${spendLimitsText(d.budget)}`;
  budget.hidden = (d.budget ?? []).length === 0;
}

function lastDay(c: DashboardCost | null): string {
  if (!c) return 'not recorded';
  if (c.calls === 0) return 'no model calls';
  const cached =
    c.replyCacheShare === null ? '' : ` (${pct(c.replyCacheShare)} of reply prompts cached by the provider)`;
  const cost =
    c.costUsd === null
      ? `cost unknown: no [prices] for ${c.unpriced.join(', ')}`
      : `$${c.costUsd.toFixed(4)}`;
  return `${plural(c.calls, 'model call')}, ${num(c.promptTokens)} prompt tokens${cached}, ${num(c.completionTokens)} completion · ${cost}${replies(c)}`;
}

/** ` · 10 replies, 20.0% after the cache went cold, $0.2100 per 1,000`. */
function replies(c: DashboardCost): string {
  if (c.replies === 0) return '';
  const cold = c.coldReplyShare === null ? '' : `, ${pct(c.coldReplyShare)} after the cache went cold`;
  const per1k = c.usdPer1kReplies === null ? '' : `, $${c.usdPer1kReplies.toFixed(4)} per 1,000`;
  return ` · ${num(c.replies)} ${c.replies === 1 ? 'reply' : 'replies'}${cold}${per1k}`;
}

const PASS_COLUMNS: readonly (readonly [string, string?])[] = [
  ['When'],
  ['Tier'],
  ['At', 'usage when triggered'],
  ['Tokens', 'context tokens before → after'],
  ['Took'],
  ['Fallback', 'extractive fallback summary'],
  ['Mem.', 'memories added'],
];

export function drawPasses(d: DashboardChannelDetail): void {
  const box = $('passes');
  if (!d.passes.length) {
    box.replaceChildren(
      el('p', {
        class: 'note',
        text: `No passes yet: the first runs when usage passes background (${Math.round(d.thresholds.background * 100)}%).`,
      }),
    );
    return;
  }
  const head = el(
    'tr',
    {},
    ...PASS_COLUMNS.map(([h, t]) => el('th', { scope: 'col', text: h, title: t, 'aria-label': t })),
    el('th', { scope: 'col', text: 'Outcome' }),
  );
  const rows = d.passes.map((p) =>
    el(
      'tr',
      {},
      el('td', { text: p.createdAt ? clock(Date.parse(p.createdAt)) : '—', title: p.createdAt ?? '' }),
      el('td', {}, el('span', { class: `tier ${p.tier}`, text: p.tier })),
      el('td', { text: p.usage === null ? '—' : pct(p.usage) }),
      el('td', {
        text:
          p.tokensBefore !== null && p.tokensAfter !== null
            ? `${num(p.tokensBefore)} → ${num(p.tokensAfter)}`
            : '—',
      }),
      el('td', { text: p.durationMs !== null ? `${(p.durationMs / 1000).toFixed(2)} s` : '—' }),
      el('td', { text: p.fallback === null ? '—' : p.fallback ? 'yes' : 'no' }),
      el('td', { class: 'num', text: num(p.memoriesAdded) }),
      el('td', { class: p.status, text: p.status, title: p.error ?? '' }),
    ),
  );
  box.replaceChildren(
    el(
      'div',
      { class: 'scroll' },
      el(
        'table',
        { class: 'passes' },
        el('caption', { class: 'sr-only', text: 'The last passes, newest first' }),
        el('thead', {}, head),
        el('tbody', {}, ...rows),
      ),
    ),
  );
}

export function drawMemories(d: DashboardChannelDetail): void {
  const box = $('memories');
  if (!d.memories.length) {
    box.replaceChildren(
      el('p', { class: 'note', text: 'No memories yet: passes extract them from what they summarize.' }),
    );
    return;
  }
  const items = d.memories.map((m) => {
    const who = m.speaker ? ` — ${m.speaker}` : '';
    const body =
      m.text.length > MEMORY_SHOWN
        ? el(
            'details',
            {},
            el('summary', { text: `${m.text.slice(0, MEMORY_SHOWN)}…${who}` }),
            el('p', { class: 'span-text', text: m.text }),
          )
        : el('span', { text: m.text + who });
    return el(
      'li',
      {},
      el('span', { class: `mtype ${m.type}`, text: m.type }),
      el('span', { class: 'imp', text: `importance ${m.importance.toFixed(2)}` }),
      body,
    );
  });
  box.replaceChildren(
    el('p', { class: 'note', text: `Top ${d.memories.length} of ${num(d.memoryCount)} by importance` }),
    el('ol', { class: 'memories' }, ...items),
  );
}
