/**
 * The selected channel's "Suggested settings", read-only: `GET …/suggestion` replays the channel's
 * archive with every candidate setting (seconds the first time; the server then serves the same answer
 * for `DASHBOARD_LIMITS.suggestionTtlMs`), so it is asked for apart from the rest of the channel, the
 * panel says it is computing meanwhile, and nothing else waits for it. The words are
 * `suggestion-view.ts`'s.
 */
import { DASHBOARD_LIMITS, type DashboardSuggestion } from '../dashboard-api.js';
import { api, newest, reason } from './api.js';
import { $, announce, el } from './dom.js';
import { state } from './state.js';
import { COMPUTING, NOTHING_ARCHIVED, type SuggestionView, suggestionView } from './suggestion-view.js';

const note = (text: string) => el('p', { class: 'note', text });

/** When (this page's clock) the selected channel's suggestion was last asked for. */
let askedAt = 0;
/**
 * The archived messages a "too little history" answer needs (1 for "nothing archived"): once the
 * channel has them, the server computes again, so the page asks again without waiting out the TTL.
 */
let needed: number | undefined;

/** The panel of a channel just selected: computing. */
export function resetSuggestion(): void {
  askedAt = 0;
  needed = undefined;
  const box = $('suggestion');
  box.setAttribute('aria-busy', 'true');
  box.replaceChildren(note(COMPUTING));
}

/** The panel of a web channel with no message yet. */
export function showNoSuggestion(): void {
  const box = $('suggestion');
  box.setAttribute('aria-busy', 'false');
  box.replaceChildren(note(NOTHING_ARCHIVED));
}

/**
 * Whether asking again gets a new answer: the one shown is older than the server keeps one, or it
 * said "too little history" and the channel now has what it needed.
 */
export const suggestionStale = () =>
  state.key !== null &&
  askedAt > 0 &&
  (Date.now() - askedAt > DASHBOARD_LIMITS.suggestionTtlMs ||
    (needed !== undefined && (state.history?.headSeq ?? 0) >= needed));

/** Asks for the selected channel's suggestion; the shown one stays until the answer is there. */
export async function loadSuggestion(): Promise<void> {
  const key = state.key;
  if (key === null) return;
  const current = newest('suggestion');
  askedAt = Date.now();
  const box = $('suggestion');
  box.setAttribute('aria-busy', 'true');
  let s: DashboardSuggestion | undefined;
  try {
    s = await api.suggestion(key);
  } catch (err) {
    if (key !== state.key || !current()) return;
    box.setAttribute('aria-busy', 'false');
    box.replaceChildren(note(`Could not suggest settings: ${reason(err)}`));
    return;
  }
  if (key !== state.key || !current()) return;
  needed =
    s === undefined || s.status === 'no_history'
      ? 1
      : s.status === 'too_little_history'
        ? s.neededMessages
        : undefined;
  if (s === undefined) showNoSuggestion();
  else drawSuggestion(s);
}

function drawSuggestion(s: DashboardSuggestion): void {
  const v = suggestionView(s);
  const box = $('suggestion');
  box.setAttribute('aria-busy', 'false');
  const parts: HTMLElement[] = [el('p', { class: `lead${v.tone ? ` ${v.tone}` : ''}`, text: v.lead })];
  if (v.rows.length) parts.push(table(v));
  if (v.would.length) parts.push(el('ul', { class: 'would' }, ...v.would.map((text) => el('li', { text }))));
  if (v.block !== null) parts.push(paste(v.block, s.key));
  box.replaceChildren(...parts, ...v.notes.map(note));
}

function table(v: SuggestionView): HTMLElement {
  const head = el(
    'tr',
    {},
    el('td'),
    ...v.columns.map((c) => el('th', { scope: 'col', class: 'num', text: c })),
  );
  const rows = v.rows.map((r) =>
    el(
      'tr',
      { 'data-row': r.key },
      el('th', { scope: 'row', text: r.label, title: r.title }),
      ...r.cells.map((c) => el('td', { class: c.tone ? `num ${c.tone}` : 'num', text: c.text })),
    ),
  );
  return el(
    'div',
    { class: 'scroll' },
    el(
      'table',
      { class: 'suggestion' },
      el('caption', {
        class: 'sr-only',
        text: `The channel's settings replayed: ${v.columns.join(' against ')}`,
      }),
      el('thead', {}, head),
      el('tbody', {}, ...rows),
    ),
  );
}

/** The block, ready to paste, and a button that copies it (or selects it where the clipboard is shut). */
function paste(block: string, key: string): HTMLElement {
  const pre = el('pre', { class: 'toml', text: block });
  const copy = el('button', { type: 'button', class: 'copy', text: 'Copy' });
  copy.onclick = async () => {
    try {
      await navigator.clipboard.writeText(block);
      copy.textContent = 'Copied';
      announce(`The suggested settings for ${key} are on the clipboard`);
    } catch {
      getSelection()?.selectAllChildren(pre);
      copy.textContent = 'Selected: copy with Ctrl+C';
    }
  };
  return el(
    'div',
    { class: 'paste' },
    note(
      `Paste into config.toml, in place of any [channels.${JSON.stringify(key)}.compaction] block: Ebb applies the file when it changes.`,
    ),
    pre,
    copy,
  );
}
