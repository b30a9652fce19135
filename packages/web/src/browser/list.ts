/**
 * The channel list: filtered by key and platform, sorted by a column, 50 rows a page. A row's link
 * opens the channel (the click is handled once, on the table, in `main.ts`).
 */
import type { DashboardChannelDetail } from '../dashboard-api.js';
import { api, newest, reason } from './api.js';
import { $, ago, el, num, pct } from './dom.js';
import { type Row, type SortKey, state } from './state.js';

const PAGE = 50;

function compare(a: Row, b: Row, k: SortKey): number {
  if (k === 'usage' || k === 'messages') return a[k] - b[k];
  const x = a[k] ?? '';
  const y = b[k] ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}

function visibleRows(): Row[] {
  const f = state.filter.toLowerCase();
  const rows = state.rows.filter(
    (r) => (!f || r.key.toLowerCase().includes(f)) && (!state.platform || r.platform === state.platform),
  );
  return rows.sort((a, b) => compare(a, b, state.sort) * state.dir || (a.key < b.key ? -1 : 1));
}

function rowItem(r: Row): HTMLTableRowElement {
  const link = el(
    'a',
    { href: `?channel=${encodeURIComponent(r.key)}`, 'data-key': r.key, title: r.key },
    el('span', { class: `plat ${r.platform}`, text: r.platform }),
    r.key.slice(r.platform.length + 1),
  );
  const bar = el(
    'div',
    {
      class: `bar ${r.reached}`,
      role: 'img',
      'aria-label': `usage ${pct(r.usage)}${r.reached === 'none' ? '' : `, past ${r.reached}`}`,
    },
    el('i', { style: `width:${Math.min(100, r.usage * 100).toFixed(1)}%` }),
    el('span', { text: pct(r.usage) }),
  );
  const pending = r.takeBacks.pending;
  // Take-backs not yet complete: first in the key's cell, which cuts a long key at its end.
  const takeBacks =
    pending === 0
      ? undefined
      : el('span', {
          class: 'takebacks-badge',
          text: `${num(pending)} pending`,
          title: `${num(pending)} take-back${pending === 1 ? '' : 's'} pending`,
        });
  return el(
    'tr',
    { 'aria-current': r.key === state.key ? 'true' : undefined, 'data-row': r.key },
    el('td', {}, takeBacks, link),
    el('td', {}, bar),
    el('td', { class: 'num', text: num(r.messages) }),
    el('td', { text: ago(r.lastActiveAt), title: r.lastActiveAt ?? '' }),
  );
}

export function drawList(): void {
  const body = $('channels');
  const active = document.activeElement;
  const focused = active instanceof HTMLElement ? active.dataset.key : undefined;
  body.replaceChildren();
  body.removeAttribute('aria-busy');
  const rows = visibleRows();
  const pages = Math.max(1, Math.ceil(rows.length / PAGE));
  state.page = Math.min(state.page, pages - 1);
  const shown = rows.slice(state.page * PAGE, state.page * PAGE + PAGE);
  state.shown = new Set(shown.map((r) => r.key));
  body.append(...shown.map(rowItem));
  if (focused) body.querySelector<HTMLElement>(`a[data-key="${CSS.escape(focused)}"]`)?.focus();
  const total = state.rows.length;
  $('channel-count').textContent = total ? `(${num(total)})` : '';
  $('list-status').textContent = !total
    ? 'No channels yet. A channel appears here with its first message on Slack, Discord or the web channel.'
    : rows.length === 0
      ? 'No channel matches the filter.'
      : `Showing ${num(state.page * PAGE + 1)}–${num(state.page * PAGE + shown.length)} of ${num(rows.length)}` +
        (rows.length < total ? ` (filtered from ${num(total)})` : '') +
        `, sorted by ${state.sort}${state.dir < 0 ? ' (descending)' : ' (ascending)'}.`;
  $('page-info').textContent = rows.length ? `page ${state.page + 1} of ${pages}` : '';
  $('prev', HTMLButtonElement).disabled = state.page === 0;
  $('next', HTMLButtonElement).disabled = state.page >= pages - 1;
  for (const th of document.querySelectorAll<HTMLElement>('th[data-sort]'))
    th.setAttribute(
      'aria-sort',
      th.dataset.sort === state.sort ? (state.dir < 0 ? 'descending' : 'ascending') : 'none',
    );
}

export async function loadList(): Promise<void> {
  const current = newest('list');
  try {
    const list = await api.channels();
    if (!current() || list === undefined) return;
    state.rows = [...list.channels];
    drawList();
  } catch (err) {
    $('list-status').textContent = `Could not load the channels (${reason(err)}); retrying.`;
  }
}

/** Draws the list again within a second, once however many turns land. */
export const listSoon = once(drawList);
/**
 * A pass spliced the context of a channel on the page (in this process or a worker's): no turn event
 * carries the usage it left, so the list is read again, at most once a second however many splices
 * land. A splice elsewhere waits for the 15 s refresh (at 1,000 channels the list is 285 KiB).
 */
export const listReloadSoon = once(() => void loadList());

function once(fn: () => void): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return () => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      fn();
    }, 1000);
  };
}

/**
 * The selected channel's detail is the newest read of its row (unless a turn event moved the row
 * after the detail was asked for; no turn event carries take-backs): the list shows what the detail
 * shows.
 */
export function rowFromDetail(d: DashboardChannelDetail, askedAt: number): void {
  const row = state.rows.find((r) => r.key === d.key);
  if (!row) return;
  if (row.takeBacks.pending !== d.takeBacks.pending) {
    row.takeBacks = d.takeBacks;
    listSoon();
  }
  if ((row.turnAt ?? 0) > askedAt || (row.usage === d.usage && row.messages === d.messages)) return;
  row.usage = d.usage;
  row.reached = d.reached;
  row.messages = d.messages;
  row.lastActiveAt = d.lastActiveAt;
  listSoon();
}
