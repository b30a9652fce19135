/**
 * The selected channel's history: the archive's latest, older or newer messages, each summary span
 * and truncation marker where it sits in the context (with the archived messages it stands for
 * collapsed inside), the divider before the raw context, and microcompaction stubs.
 */
import {
  DASHBOARD_LIMITS,
  type DashboardHistory,
  type DashboardMessage,
  type DashboardSpan,
} from '../dashboard-api.js';
import { api, reason } from './api.js';
import { $, announce, el, num, plural } from './dom.js';
import { state } from './state.js';

const TEXT_SHOWN = 400;
/** Messages the page keeps loaded (the oldest go first). */
const MAX_LOADED = 1000;

export type HistoryRequest =
  | { readonly latest: true }
  | { readonly before: number }
  | { readonly after: number };

function query(how: HistoryRequest): string {
  const { historyPage, historyPageMax } = DASHBOARD_LIMITS;
  if ('latest' in how)
    return `?limit=${Math.min(historyPageMax, Math.max(historyPage, state.messages.length))}`;
  if ('before' in how) return `?before=${how.before}`;
  return `?after=${how.after}&limit=${historyPageMax}`;
}

export async function loadHistory(how: HistoryRequest): Promise<void> {
  const key = state.key;
  if (key === null) return;
  let h: DashboardHistory | undefined;
  try {
    h = await api.history(key, query(how));
  } catch (err) {
    $('history-note').textContent = `Could not load the history: ${reason(err)}`;
    return;
  }
  if (key !== state.key || !h) return;
  if ('latest' in how) {
    state.messages = [];
    state.spans = new Map();
  }
  const known = new Set(state.messages.map((m) => m.seq));
  const added = h.messages.filter((m) => !known.has(m.seq));
  state.messages = [...state.messages, ...added].sort((a, b) => a.seq - b.seq).slice(-MAX_LOADED);
  for (const s of h.spans) state.spans.set(s.fromSeq, s);
  state.history = { headSeq: h.headSeq, prefixEnd: h.prefixEnd };
  drawHistory('after' in how);
  if ('after' in how && added.length) announce(`${plural(added.length, 'new message')} in ${key}`);
}

/** The newest loaded message's seq (0 when none): where a live update asks from. */
export const lastLoadedSeq = () => state.messages.at(-1)?.seq ?? 0;

function messageItem(m: DashboardMessage): HTMLLIElement {
  const cls = `msg ${m.role}${m.place === 'context' ? '' : ` covered ${m.place}`}`;
  const meta = el(
    'div',
    { class: 'meta' },
    el('span', { text: `#${m.seq} ` }),
    el('b', { text: m.author }),
    m.ts ? el('span', { text: ` · ${m.ts.replace('T', ' ').slice(0, 19)}` }) : null,
    m.place === 'summarized' ? el('span', { class: 'badge', text: 'summarized' }) : null,
    m.place === 'truncated' ? el('span', { class: 'badge', text: 'set aside' }) : null,
    m.stub ? el('span', { class: 'badge stub', text: 'stubbed' }) : null,
    m.toolCalls ? el('span', { class: 'badge', text: `calls ${m.toolCalls.join(', ')}` }) : null,
  );
  const more = m.chars > m.text.length ? ` … (${num(m.chars)} characters in all)` : '';
  let body: HTMLElement;
  if (m.stub) {
    body = el(
      'div',
      { class: 'stubbox' },
      el('div', { class: 'note', text: `In the context (${num(m.stub.tokens)} tokens):` }),
      el('div', { class: 'text', text: m.stub.text }),
      el(
        'details',
        { 'data-k': `msg:${m.seq}` },
        el('summary', { text: `The archived result (${num(m.chars)} characters)` }),
        el('div', { class: 'text', text: m.text + more }),
      ),
    );
  } else if (m.text.length > TEXT_SHOWN) {
    body = el(
      'details',
      { 'data-k': `msg:${m.seq}` },
      el('summary', { class: 'text', text: `${m.text.slice(0, TEXT_SHOWN)}…` }),
      el('div', { class: 'text', text: m.text + more }),
    );
  } else body = el('div', { class: 'text', text: m.text + more });
  return el('li', { class: cls, 'data-seq': m.seq }, meta, body);
}

/** A span as the model sees it; the archived messages it stands for (those loaded) in a list inside, collapsed. */
function spanItem(s: DashboardSpan, covered: readonly DashboardMessage[]): HTMLLIElement {
  const inside = covered.length
    ? el(
        'details',
        { class: 'covered-box', 'data-k': `cov:${s.fromSeq}` },
        el('summary', {
          class: 'note',
          text: `The ${plural(covered.length, 'archived message')} of this range loaded here`,
        }),
        el('ol', { class: 'covered-list' }, ...covered.map(messageItem)),
      )
    : null;
  if (s.kind === 'summary')
    return el(
      'li',
      { class: 'span summary', 'data-span': s.fromSeq },
      el(
        'details',
        { 'data-k': `span:${s.fromSeq}` },
        el('summary', {
          text: `Summary of #${s.fromSeq}–#${s.toSeq} · ${num(s.toSeq - s.fromSeq + 1)} messages in ${num(s.tokens)} tokens`,
        }),
        el('div', { class: 'span-text', text: s.text }),
        inside,
      ),
    );
  return el(
    'li',
    { class: 'span truncated', 'data-span': s.fromSeq },
    el(
      'details',
      { 'data-k': `span:${s.fromSeq}` },
      el('summary', {
        text: `Truncation marker: #${s.fromSeq}–#${s.toSeq} set aside · ${num(s.tokens)} tokens`,
      }),
      el('p', {
        class: 'span-text',
        text: 'An emergency truncation put a marker in place of these messages; the archive keeps them, and a later pass replaces the marker with a summary.',
      }),
      inside,
    ),
  );
}

/** `stick`: a live update, which keeps the reader's place unless they were at the bottom. */
function drawHistory(stick: boolean): void {
  const list = $('history');
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  // What the reader opened stays open when live updates draw the list again.
  const opened = new Set(
    [...list.querySelectorAll<HTMLDetailsElement>('details[open]')].map((d) => d.dataset.k),
  );
  list.replaceChildren();
  list.removeAttribute('aria-busy');
  const h = state.history;
  const first = state.messages[0];
  if (h === null || first === undefined) {
    list.append(el('li', { class: 'note', text: 'No messages archived yet.' }));
    $('older').hidden = true;
    return;
  }
  const spans = [...state.spans.values()].sort((a, b) => a.fromSeq - b.fromSeq);
  const covered = new Map<number, DashboardMessage[]>();
  for (const m of state.messages)
    if (m.spanFrom !== undefined) covered.set(m.spanFrom, [...(covered.get(m.spanFrom) ?? []), m]);
  for (const s of spans) list.append(spanItem(s, covered.get(s.fromSeq) ?? []));
  if (h.prefixEnd > 0)
    list.append(
      el('li', {
        class: 'divider',
        text: `the context holds the messages from #${h.prefixEnd + 1} on as they are`,
      }),
    );
  for (const m of state.messages) if (m.place === 'context') list.append(messageItem(m));
  for (const d of list.querySelectorAll<HTMLDetailsElement>('details[data-k]'))
    if (opened.has(d.dataset.k)) d.open = true;
  $('older').hidden = first.seq <= 1;
  $('history-note').textContent =
    `${num(state.messages.length)} of ${num(h.headSeq)} messages shown` +
    (spans.length ? ` · the context starts with ${plural(spans.length, 'span')} up to #${h.prefixEnd}` : '') +
    '.';
  if (!stick || atBottom) list.scrollTop = list.scrollHeight;
}
