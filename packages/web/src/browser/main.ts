/**
 * The dashboard page's script (the page is `dashboard-page.ts`; esbuild bundles this entry and its
 * imports into the one script the page inlines, see `dashboard-bundle.ts`): the controls, then the
 * list, then the asked-for channel or the most recently active one.
 *
 * Modules: `state` (what the page holds), `api` (the routes, typed with `dashboard-api.ts`), `list`,
 * `channel` (the selected channel) with `overview`, `chart`, `history` and `suggestion`, `live` (the
 * event stream); `format` and `suggestion-view` are pure, unit-tested under Node.
 */
import { refreshSelected, select, showEmptyChannel } from './channel.js';
import { $, announce } from './dom.js';
import { loadHistory } from './history.js';
import { drawList, loadList } from './list.js';
import { connect } from './live.js';
import { type SortKey, state } from './state.js';

/** The channel a `?channel=` names: a bare id is a web channel's. */
const askedChannel = () => {
  const k = new URLSearchParams(location.search).get('channel');
  return k === null ? undefined : k.includes(':') ? k : `web:${k}`;
};

function wireList(): void {
  const filter = $('filter', HTMLInputElement);
  filter.oninput = () => {
    state.filter = filter.value;
    state.page = 0;
    drawList();
  };
  const platform = $('platform', HTMLSelectElement);
  platform.onchange = () => {
    state.platform = platform.value;
    state.page = 0;
    drawList();
  };
  for (const th of document.querySelectorAll<HTMLElement>('th[data-sort]')) {
    const button = th.querySelector('button');
    if (button === null) continue;
    button.onclick = () => {
      const k = th.dataset.sort as SortKey;
      if (state.sort === k) state.dir = state.dir === 1 ? -1 : 1;
      else {
        state.sort = k;
        state.dir = k === 'key' ? 1 : -1;
      }
      state.page = 0;
      drawList();
    };
  }
  $('prev').onclick = () => {
    state.page--;
    drawList();
  };
  $('next').onclick = () => {
    state.page++;
    drawList();
  };
  // A row's link opens its channel here; with a modifier key, where the browser opens links.
  $('channels').addEventListener('click', (e) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || !(e.target instanceof Element)) return;
    const key = e.target.closest<HTMLElement>('a[data-key]')?.dataset.key;
    if (key === undefined) return;
    e.preventDefault();
    void select(key, { push: true, focus: true });
  });
  const openWeb = $('open-web', HTMLFormElement);
  openWeb.onsubmit = (e) => {
    e.preventDefault();
    const id = openWeb.elements.namedItem('channel');
    if (id instanceof HTMLInputElement) void select(`web:${id.value}`, { push: true, focus: true });
  };
}

function wireChannel(): void {
  $('older').onclick = () => {
    const first = state.messages[0];
    if (first) void loadHistory({ before: first.seq });
  };
  const author = $('chat-author', HTMLInputElement);
  const text = $('chat-text', HTMLInputElement);
  $('chat').onsubmit = async (e) => {
    e.preventDefault();
    const key = state.key;
    const message = text.value;
    if (!message.trim() || key === null || !key.startsWith('web:')) return;
    text.value = '';
    const res = await fetch(`/api/channels/${encodeURIComponent(key.slice(4))}/messages`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: author.value || 'operator', text: message }),
    });
    if (!res.ok) announce(`The message was not sent: ${res.status}`);
    if (!state.detail) {
      await loadList();
      void select(key);
    } else refreshSelected(false);
  };
  window.onpopstate = () => {
    const key = askedChannel();
    if (key !== undefined) void select(key);
  };
}

async function start(): Promise<void> {
  wireList();
  wireChannel();
  connect();
  await loadList();
  setInterval(() => void loadList(), 15_000);
  const asked = askedChannel();
  if (asked !== undefined) return select(asked);
  const recent = [...state.rows].sort(
    (a, b) => (b.lastActiveAt ?? '').localeCompare(a.lastActiveAt ?? '') || b.usage - a.usage,
  )[0];
  if (recent === undefined) {
    showEmptyChannel(
      'No channels yet',
      'Talk to Ebb on Slack or Discord, or open a web channel on the left: its context, passes and memories show here.',
    );
    return;
  }
  return select(recent.key);
}

void start();
