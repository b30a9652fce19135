/**
 * The dashboard page's script (see `dashboard-page.ts`): plain browser JS in a string, no build
 * step. Written without template literals or backslashes, so it can live in template strings as is:
 * this module's, the usage chart's (`dashboard-script-chart.ts`) and the history's
 * (`dashboard-script-history.ts`), joined in order into one function.
 *
 * State: every channel row (from `/api/dashboard/channels`, refreshed every 15 s, after a splice and
 * from turn events and the selected channel's detail),
 * the selected key, and the selected channel's detail, usage and loaded history. Text from the
 * server only ever goes into the DOM as text (`textContent`), never as HTML.
 */
import { USAGE_CHART_SCRIPT } from './dashboard-script-chart.js';
import { CHANNEL_HISTORY_SCRIPT } from './dashboard-script-history.js';

// Helpers, state, the channel list and the selected channel's overview, passes and memories.
const SCRIPT_START = `
(() => {
  'use strict';
  const PAGE = 50;
  const TEXT_SHOWN = 400;
  const MEMORY_SHOWN = 160;
  const MAX_LOADED = 1000;
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...children) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== undefined && c !== null) e.append(c);
    return e;
  };
  const pct = (x) => (x * 100).toFixed(1) + '%';
  const num = (n) => n === null || n === undefined ? '—' : Number(n).toLocaleString('en');
  const platformOf = (key) => key.slice(0, key.indexOf(':'));
  const reachedOf = (u, t) => u >= t.emergency ? 'emergency' : u >= t.aggressive ? 'aggressive' : u >= t.background ? 'background' : 'none';
  const ago = (iso) => {
    if (!iso) return '—';
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) return Math.round(s) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    if (s < 86400) return Math.round(s / 3600) + ' h ago';
    return Math.round(s / 86400) + ' d ago';
  };
  const clock = (ms) => new Date(ms).toLocaleTimeString('en-GB');
  const api = async (path) => {
    const res = await fetch(path, { credentials: 'same-origin' });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new Error(path + ': ' + res.status);
    return res.json();
  };
  const enc = encodeURIComponent;
  // Requests of one kind can answer out of order: only the newest one's answer is drawn.
  const asked = {};
  const newest = (kind) => { const n = (asked[kind] = (asked[kind] || 0) + 1); return () => asked[kind] === n; };
  const announce = (text) => { const a = $('announcer'); a.append(el('p', { text })); while (a.children.length > 5) a.firstChild.remove(); };

  const state = {
    rows: [], loaded: false, sort: 'usage', dir: -1, filter: '', platform: '', page: 0,
    key: null, detail: null, usage: null, messages: [], spans: new Map(), history: null, generation: 0,
    shown: new Set(),
  };

  // ---- the channel list ----
  function visibleRows() {
    const f = state.filter.toLowerCase();
    const rows = state.rows.filter((r) => (!f || r.key.toLowerCase().includes(f)) && (!state.platform || r.platform === state.platform));
    const k = state.sort, d = state.dir;
    rows.sort((a, b) => {
      const x = a[k] ?? '', y = b[k] ?? '';
      return (x < y ? -1 : x > y ? 1 : 0) * d || (a.key < b.key ? -1 : 1);
    });
    return rows;
  }

  function drawList() {
    const body = $('channels');
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : undefined;
    body.replaceChildren();
    body.removeAttribute('aria-busy');
    const rows = visibleRows();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const shown = rows.slice(state.page * PAGE, state.page * PAGE + PAGE);
    state.shown = new Set(shown.map((r) => r.key));
    for (const r of shown) {
      const link = el('a', { href: '?channel=' + enc(r.key), 'data-key': r.key, title: r.key }, el('span', { class: 'plat ' + r.platform, text: r.platform }), r.key.slice(r.platform.length + 1));
      link.onclick = (e) => { if (e.metaKey || e.ctrlKey || e.shiftKey) return; e.preventDefault(); select(r.key, { push: true, focus: true }); };
      const bar = el('div', { class: 'bar ' + r.reached, role: 'img', 'aria-label': 'usage ' + pct(r.usage) + (r.reached === 'none' ? '' : ', past ' + r.reached) },
        el('i', { style: 'width:' + Math.min(100, r.usage * 100).toFixed(1) + '%' }), el('span', { text: pct(r.usage) }));
      body.append(el('tr', { 'aria-current': r.key === state.key ? 'true' : undefined, 'data-row': r.key },
        el('td', {}, link), el('td', {}, bar), el('td', { class: 'num', text: num(r.messages) }), el('td', { text: ago(r.lastActiveAt), title: r.lastActiveAt || '' })));
    }
    if (focused) { const again = body.querySelector('a[data-key="' + CSS.escape(focused) + '"]'); if (again) again.focus(); }
    const total = state.rows.length;
    $('channel-count').textContent = total ? '(' + num(total) + ')' : '';
    $('list-status').textContent = !total
      ? 'No channels yet. A channel appears here with its first message on Slack, Discord or the web channel.'
      : rows.length === 0 ? 'No channel matches the filter.'
      : 'Showing ' + num(state.page * PAGE + 1) + '–' + num(state.page * PAGE + shown.length) + ' of ' + num(rows.length) + (rows.length < total ? ' (filtered from ' + num(total) + ')' : '') + ', sorted by ' + state.sort + (state.dir < 0 ? ' (descending)' : ' (ascending)') + '.';
    $('page-info').textContent = rows.length ? 'page ' + (state.page + 1) + ' of ' + pages : '';
    $('prev').disabled = state.page === 0;
    $('next').disabled = state.page >= pages - 1;
    for (const th of document.querySelectorAll('th[data-sort]'))
      th.setAttribute('aria-sort', th.dataset.sort === state.sort ? (state.dir < 0 ? 'descending' : 'ascending') : 'none');
  }

  async function loadList() {
    const current = newest('list');
    try {
      const { channels } = await api('/api/dashboard/channels');
      if (!current()) return;
      state.rows = channels;
      state.loaded = true;
      drawList();
    } catch (err) {
      $('list-status').textContent = 'Could not load the channels (' + err.message + '); retrying.';
    }
  }

  let listTimer;
  const listSoon = () => { if (!listTimer) listTimer = setTimeout(() => { listTimer = undefined; drawList(); }, 1000); };
  // A pass spliced the context of a channel on the page (in this process or a worker's): no turn
  // event carries the usage it left, so the list is read again, at most once a second however many
  // splices land. A splice elsewhere waits for the 15 s refresh (at 1,000 channels the list is 285 KiB).
  let reloadTimer;
  const listReloadSoon = () => { if (!reloadTimer) reloadTimer = setTimeout(() => { reloadTimer = undefined; loadList(); }, 1000); };
  // The selected channel's detail is the newest read of its row (unless a turn event updated the row
  // after the detail was asked for): the list shows what the detail shows.
  function rowFromDetail(d, askedAt) {
    const row = state.rows.find((r) => r.key === d.key);
    if (!row || (row.turnAt || 0) > askedAt || (row.usage === d.usage && row.messages === d.messages)) return;
    row.usage = d.usage; row.reached = d.reached; row.messages = d.messages; row.lastActiveAt = d.lastActiveAt;
    listSoon();
  }

  // ---- the selected channel ----
  function showEmptyChannel(title, text) {
    $('channel-title').textContent = title;
    $('channel-panel').setAttribute('aria-busy', 'false');
    $('channel-body').hidden = true;
    const box = $('empty-channel');
    box.hidden = false;
    box.replaceChildren(el('p', { text }));
  }

  function resetChannel(key) {
    state.key = key; state.detail = null; state.usage = null; state.messages = []; state.spans = new Map(); state.history = null;
    $('channel-panel').setAttribute('aria-busy', 'true');
    $('empty-channel').hidden = true;
    $('channel-body').hidden = false;
    $('channel-title').textContent = key;
    $('usage').textContent = 'usage —'; $('tokens').textContent = 'tokens —'; $('spans').textContent = 'spans —';
    $('gauge-fill').style.width = '0'; $('gauge').removeAttribute('aria-valuenow');
    $('chart').replaceChildren(el('p', { class: 'note', text: 'Loading usage…' }));
    $('passes').replaceChildren(el('p', { class: 'note', text: 'Loading passes…' }));
    $('memories').replaceChildren(el('p', { class: 'note', text: 'Loading memories…' }));
    $('history').replaceChildren(el('li', { class: 'note', text: 'Loading history…' }));
    $('history').setAttribute('aria-busy', 'true');
    $('history-note').textContent = '';
    $('older').hidden = true;
    $('chat').hidden = !key.startsWith('web:');
  }

  async function select(key, opts) {
    opts = opts || {};
    resetChannel(key);
    if (opts.push) history.pushState(null, '', '?channel=' + enc(key));
    else history.replaceState(null, '', '?channel=' + enc(key));
    for (const tr of document.querySelectorAll('#channels tr')) tr.setAttribute('aria-current', tr.dataset.row === key ? 'true' : 'false');
    if (opts.focus) $('channel-title').focus();
    await Promise.all([loadDetail(), loadUsage(), loadHistory({ latest: true })]);
  }

  async function loadDetail() {
    const key = state.key, current = newest('detail'), askedAt = Date.now();
    let d;
    try { d = await api('/api/dashboard/channels/' + enc(key)); } catch (err) { $('spans').textContent = 'Could not load ' + key + ': ' + err.message; return; }
    if (key !== state.key || !current()) return;
    if (!d) {
      showEmptyChannel(key, key.startsWith('web:')
        ? 'No messages yet: send the first one below.'
        : 'Ebb has no channel with this key.');
      if (key.startsWith('web:')) { $('channel-body').hidden = false; $('chat').hidden = false; for (const id of ['passes', 'memories']) $(id).replaceChildren(el('p', { class: 'note', text: 'Nothing yet.' })); $('chart').replaceChildren(el('p', { class: 'note', text: 'No usage yet.' })); $('history').replaceChildren(el('li', { class: 'note', text: 'No messages yet.' })); $('history').removeAttribute('aria-busy'); }
      return;
    }
    state.detail = d;
    rowFromDetail(d, askedAt);
    $('channel-panel').setAttribute('aria-busy', 'false');
    $('empty-channel').hidden = true;
    $('channel-body').hidden = false;
    drawOverview();
    drawPasses();
    drawMemories();
  }

  function drawOverview() {
    const d = state.detail; if (!d) return;
    const t = d.thresholds;
    $('channel-title').textContent = d.key;
    const fill = $('gauge-fill');
    fill.style.width = Math.min(100, d.usage * 100) + '%';
    fill.className = 'fill ' + reachedOf(d.usage, t);
    $('gauge').setAttribute('aria-valuenow', (d.usage * 100).toFixed(1));
    $('gauge').setAttribute('aria-valuetext', pct(d.usage) + ' of the prompt budget');
    const gauge = $('gauge');
    gauge.querySelectorAll('.mark').forEach((m) => m.remove());
    for (const [name, at] of Object.entries(t)) gauge.append(el('div', { class: 'mark', style: 'left:' + at * 100 + '%', title: name + ' ' + Math.round(at * 100) + '%' }));
    $('usage').textContent = 'usage ' + pct(d.usage) + (d.reached === 'none' ? '' : ' (past ' + d.reached + ')');
    const k = d.tokens.calibration || 1;
    $('tokens').textContent = num(Math.round((d.tokens.context + d.tokens.reserved) * k)) + ' of ' + num(d.tokens.budget) + ' tokens as the provider counts them (' + num(d.tokens.reserved) + ' reserved' + (k === 1 ? '' : ', our count × ' + k.toFixed(2)) + ') · ' + num(d.messages) + ' messages archived, ' + num(d.inContext) + ' raw in the context · thresholds ' + Object.entries(t).map(([n, a]) => n + ' ' + Math.round(a * 100) + '%').join(', ');
    const s = d.spans;
    $('spans').textContent = s.summaries + ' summary span' + (s.summaries === 1 ? '' : 's') + ' (' + num(s.summaryTokens) + ' tokens), ' + s.truncations + ' truncation' + (s.truncations === 1 ? '' : 's') + (d.microcompaction ? ', ' + d.microcompaction.stubbed + ' tool results stubbed (' + num(d.microcompaction.tokensSaved) + ' tokens saved)' : '');
    const c = d.lastDay;
    $('cost').textContent = 'last 24 hours: ' + (!c ? 'not recorded' : c.calls === 0 ? 'no model calls' : c.calls + ' model call' + (c.calls === 1 ? '' : 's') + ', ' + num(c.promptTokens) + ' prompt tokens' + (c.replyCacheShare === null ? '' : ' (' + pct(c.replyCacheShare) + ' of reply prompts cached by the provider)') + ', ' + num(c.completionTokens) + ' completion · ' + (c.costUsd === null ? 'cost unknown: no [prices] for ' + c.unpriced.join(', ') : '$' + c.costUsd.toFixed(4)));
  }

  function drawPasses() {
    const d = state.detail; const box = $('passes');
    if (!d.passes.length) { box.replaceChildren(el('p', { class: 'note', text: 'No passes yet: the first runs when usage passes background (' + Math.round(d.thresholds.background * 100) + '%).' })); return; }
    const head = el('tr', {}, ...[['When'], ['Tier'], ['At', 'usage when triggered'], ['Tokens', 'context tokens before → after'], ['Took'], ['Fallback', 'extractive fallback summary'], ['Mem.', 'memories added']].map(([h, t]) => el('th', { scope: 'col', text: h, title: t, 'aria-label': t })), el('th', { scope: 'col', text: 'Outcome' }));
    const rows = d.passes.map((p) => el('tr', {},
      el('td', { text: p.createdAt ? clock(Date.parse(p.createdAt)) : '—', title: p.createdAt || '' }),
      el('td', {}, el('span', { class: 'tier ' + p.tier, text: p.tier })),
      el('td', { text: p.usage === null ? '—' : pct(p.usage) }),
      el('td', { text: p.tokensBefore !== null && p.tokensAfter !== null ? num(p.tokensBefore) + ' → ' + num(p.tokensAfter) : '—' }),
      el('td', { text: p.durationMs !== null ? (p.durationMs / 1000).toFixed(2) + ' s' : '—' }),
      el('td', { text: p.fallback === null ? '—' : p.fallback ? 'yes' : 'no' }),
      el('td', { class: 'num', text: num(p.memoriesAdded) }),
      el('td', { class: p.status, text: p.status, title: p.error || '' })));
    box.replaceChildren(el('div', { class: 'scroll' }, el('table', { class: 'passes' }, el('caption', { class: 'sr-only', text: 'The last passes, newest first' }), el('thead', {}, head), el('tbody', {}, ...rows))));
  }

  function drawMemories() {
    const d = state.detail; const box = $('memories');
    if (!d.memories.length) { box.replaceChildren(el('p', { class: 'note', text: 'No memories yet: passes extract them from what they summarize.' })); return; }
    const items = d.memories.map((m) => {
      const who = m.speaker ? ' — ' + m.speaker : '';
      const body = m.text.length > MEMORY_SHOWN
        ? el('details', {}, el('summary', { text: m.text.slice(0, MEMORY_SHOWN) + '…' + who }), el('p', { class: 'span-text', text: m.text }))
        : el('span', { text: m.text + who });
      return el('li', {}, el('span', { class: 'mtype ' + m.type, text: m.type }), el('span', { class: 'imp', text: 'importance ' + m.importance.toFixed(2) }), body);
    });
    box.replaceChildren(el('p', { class: 'note', text: 'Top ' + d.memories.length + ' of ' + num(d.memoryCount) + ' by importance' }), el('ol', { class: 'memories' }, ...items));
  }
`;

// Live updates, the controls, and the start.
const SCRIPT_END = `
  // ---- live updates ----
  let refreshTimer;
  function refreshSelected(all) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => {
      loadDetail(); loadUsage();
      if (all) loadHistory({ latest: true });
      else if (state.history) loadHistory({ after: state.messages.length ? state.messages[state.messages.length - 1].seq : 0 });
      else loadHistory({ latest: true });
    }, 100);
  }

  const PASS_WORDS = { 'compaction.completed': 'completed', 'compaction.failed': 'failed', 'compaction.emergency': 'truncated the context', 'compaction.microcompacted': 'stubbed old tool results', 'compaction.started': 'started' };
  function connect() {
    const stream = new EventSource('/api/dashboard/events');
    stream.addEventListener('ready', () => { $('stream-state').textContent = 'live'; $('stream-state').className = 'stream live'; });
    stream.onerror = () => { $('stream-state').textContent = 'reconnecting…'; $('stream-state').className = 'stream'; };
    stream.addEventListener('turn', (e) => {
      const ev = JSON.parse(e.data);
      const row = state.rows.find((r) => r.key === ev.channel);
      if (row) { row.usage = ev.usage; row.reached = reachedOf(ev.usage, row.thresholds); row.lastActiveAt = new Date(ev.at).toISOString(); row.turnAt = Date.now(); listSoon(); }
      else loadList();
      if (ev.channel === state.key) refreshSelected(false);
    });
    stream.addEventListener('compaction', (e) => {
      const ev = JSON.parse(e.data);
      if (ev.channel !== state.key) return;
      const words = PASS_WORDS[ev.event];
      if (words) announce(ev.tier + ' ' + (ev.event === 'compaction.completed' || ev.event === 'compaction.failed' || ev.event === 'compaction.started' ? 'pass ' : '') + words + ' in ' + ev.channel);
      refreshSelected(ev.event !== 'compaction.started' && ev.event !== 'compaction.triggered' && ev.event !== 'compaction.enqueued');
    });
    stream.addEventListener('context', (e) => { const ev = JSON.parse(e.data); if (state.shown.has(ev.channel)) listReloadSoon(); if (ev.channel === state.key) refreshSelected(true); });
  }

  // ---- controls ----
  $('filter').oninput = (e) => { state.filter = e.target.value; state.page = 0; drawList(); };
  $('platform').onchange = (e) => { state.platform = e.target.value; state.page = 0; drawList(); };
  for (const th of document.querySelectorAll('th[data-sort]'))
    th.querySelector('button').onclick = () => {
      const k = th.dataset.sort;
      if (state.sort === k) state.dir = -state.dir; else { state.sort = k; state.dir = k === 'key' ? 1 : -1; }
      state.page = 0; drawList();
    };
  $('prev').onclick = () => { state.page--; drawList(); };
  $('next').onclick = () => { state.page++; drawList(); };
  $('older').onclick = () => { if (state.messages.length) loadHistory({ before: state.messages[0].seq }); };
  $('open-web').onsubmit = (e) => { e.preventDefault(); select('web:' + e.target.elements.channel.value, { push: true, focus: true }); };
  $('chat').onsubmit = async (e) => {
    e.preventDefault();
    const form = e.target, text = form.text.value;
    if (!text.trim() || !state.key.startsWith('web:')) return;
    form.text.value = '';
    const res = await fetch('/api/channels/' + enc(state.key.slice(4)) + '/messages', {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: form.author.value || 'operator', text }),
    });
    if (!res.ok) announce('The message was not sent: ' + res.status);
    if (!state.detail) { await loadList(); select(state.key); } else refreshSelected(false);
  };
  window.onpopstate = () => { const k = new URLSearchParams(location.search).get('channel'); if (k) select(k.includes(':') ? k : 'web:' + k); };

  // ---- start: the list, then the asked-for channel or the most recently active one ----
  (async () => {
    connect();
    await loadList();
    setInterval(loadList, 15000);
    const asked = new URLSearchParams(location.search).get('channel');
    if (asked) return select(asked.includes(':') ? asked : 'web:' + asked);
    if (!state.rows.length) {
      showEmptyChannel('No channels yet', 'Talk to Ebb on Slack or Discord, or open a web channel on the left: its context, passes and memories show here.');
      return;
    }
    const recent = [...state.rows].sort((a, b) => (b.lastActiveAt || '').localeCompare(a.lastActiveAt || '') || b.usage - a.usage)[0];
    select(recent.key);
  })();
})();
`;

/** The parts in order, inside one function: each uses the helpers and `state` `SCRIPT_START` declares. */
export const DASHBOARD_SCRIPT = SCRIPT_START + USAGE_CHART_SCRIPT + CHANNEL_HISTORY_SCRIPT + SCRIPT_END;
