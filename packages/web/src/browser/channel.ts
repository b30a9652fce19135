/**
 * The selected channel: choosing it (the address follows), its empty and loading states, and reading
 * its detail, usage and history again when it changes (its suggested settings once, apart: they take
 * seconds to compute, and again only once the server's copy is old).
 */
import type { DashboardChannelDetail } from '../dashboard-api.js';
import { api, newest, reason } from './api.js';
import { loadUsage } from './chart.js';
import { $, el } from './dom.js';
import { lastLoadedSeq, loadHistory } from './history.js';
import { rowFromDetail } from './list.js';
import { drawMemories, drawOverview, drawPasses } from './overview.js';
import { state } from './state.js';
import { loadSuggestion, resetSuggestion, showNoSuggestion, suggestionStale } from './suggestion.js';

const isWeb = (key: string) => key.startsWith('web:');

export function showEmptyChannel(title: string, text: string): void {
  $('channel-title').textContent = title;
  $('channel-panel').setAttribute('aria-busy', 'false');
  $('channel-body').hidden = true;
  const box = $('empty-channel');
  box.hidden = false;
  box.replaceChildren(el('p', { text }));
}

const note = (text: string) => el('p', { class: 'note', text });

function resetChannel(key: string): void {
  state.key = key;
  state.detail = null;
  state.usage = null;
  state.messages = [];
  state.spans = new Map();
  state.history = null;
  $('channel-panel').setAttribute('aria-busy', 'true');
  $('empty-channel').hidden = true;
  $('channel-body').hidden = false;
  $('channel-title').textContent = key;
  $('usage').textContent = 'usage —';
  $('tokens').textContent = 'tokens —';
  $('spans').textContent = 'spans —';
  $('take-backs').hidden = true;
  $('gauge-fill').style.width = '0';
  $('gauge').removeAttribute('aria-valuenow');
  $('chart').replaceChildren(note('Loading usage…'));
  $('passes').replaceChildren(note('Loading passes…'));
  $('memories').replaceChildren(note('Loading memories…'));
  $('history').replaceChildren(el('li', { class: 'note', text: 'Loading history…' }));
  $('history').setAttribute('aria-busy', 'true');
  $('history-note').textContent = '';
  $('older').hidden = true;
  $('chat').hidden = !isWeb(key);
  resetSuggestion();
}

/** Shows channel `key`: `push` adds it to the browser's history, `focus` moves focus to its title. */
export async function select(key: string, opts: { push?: boolean; focus?: boolean } = {}): Promise<void> {
  resetChannel(key);
  const address = `?channel=${encodeURIComponent(key)}`;
  if (opts.push) history.pushState(null, '', address);
  else history.replaceState(null, '', address);
  for (const tr of document.querySelectorAll<HTMLElement>('#channels tr'))
    tr.setAttribute('aria-current', tr.dataset.row === key ? 'true' : 'false');
  if (opts.focus) $('channel-title').focus();
  void loadSuggestion();
  await Promise.all([loadDetail(), loadUsage(), loadHistory({ latest: true })]);
}

/** A web channel with no message yet: its empty views, and the chat form to start it. */
function showNewWebChannel(key: string): void {
  showEmptyChannel(key, 'No messages yet: send the first one below.');
  $('channel-body').hidden = false;
  $('chat').hidden = false;
  for (const id of ['passes', 'memories']) $(id).replaceChildren(note('Nothing yet.'));
  $('chart').replaceChildren(note('No usage yet.'));
  showNoSuggestion();
  $('history').replaceChildren(el('li', { class: 'note', text: 'No messages yet.' }));
  $('history').removeAttribute('aria-busy');
}

async function loadDetail(): Promise<void> {
  const key = state.key;
  if (key === null) return;
  const current = newest('detail');
  const askedAt = Date.now();
  let d: DashboardChannelDetail | undefined;
  try {
    d = await api.channel(key);
  } catch (err) {
    $('spans').textContent = `Could not load ${key}: ${reason(err)}`;
    return;
  }
  if (key !== state.key || !current()) return;
  if (!d) {
    if (isWeb(key)) showNewWebChannel(key);
    else showEmptyChannel(key, 'Ebb has no channel with this key.');
    return;
  }
  state.detail = d;
  rowFromDetail(d, askedAt);
  $('channel-panel').setAttribute('aria-busy', 'false');
  $('empty-channel').hidden = true;
  $('channel-body').hidden = false;
  drawOverview(d);
  drawPasses(d);
  drawMemories(d);
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

/**
 * Reads the selected channel again, once for a burst of events: `all` reloads its history from the
 * latest page (a splice moved the spans), else only the messages after the last one loaded.
 */
export function refreshSelected(all: boolean): void {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => {
    void loadDetail();
    void loadUsage();
    void loadHistory(all || !state.history ? { latest: true } : { after: lastLoadedSeq() });
    if (suggestionStale()) void loadSuggestion();
  }, 100);
}
