/**
 * The live feed (`GET /api/dashboard/events`): a turn moves its channel's row, a compaction event is
 * announced for the selected channel, a splice or a finished take-back reloads the rows on the list's
 * page; the selected channel is read again after any of them (its pending take-backs with it: one a
 * worker in another process completed arrives only as its `context` event).
 */

import { thresholdReached } from '@ebb/core';
import type { DashboardEvent } from '../dashboard-api.js';
import { refreshSelected } from './channel.js';
import { $, announce } from './dom.js';
import { listReloadSoon, listSoon, loadList } from './list.js';
import { state } from './state.js';

type EventOf<T extends DashboardEvent['type']> = Extract<DashboardEvent, { type: T }>;

/** The compaction events the live region announces, and the words it uses. */
const PASS_WORDS: Readonly<Record<string, string>> = {
  'compaction.completed': 'pass completed',
  'compaction.failed': 'pass failed',
  'compaction.started': 'pass started',
  'compaction.emergency': 'truncated the context',
  'compaction.microcompacted': 'stubbed old tool results',
};
/** Events after which the selected channel's history is read from the latest page (its spans moved). */
const BEFORE_A_PASS = new Set(['compaction.started', 'compaction.triggered', 'compaction.enqueued']);

function onTurn(ev: EventOf<'turn'>): void {
  const row = state.rows.find((r) => r.key === ev.channel);
  if (row) {
    row.usage = ev.usage;
    row.reached = thresholdReached(ev.usage, row.thresholds);
    row.lastActiveAt = new Date(ev.at).toISOString();
    row.turnAt = Date.now();
    listSoon();
  } else void loadList();
  if (ev.channel === state.key) refreshSelected(false);
}

function onCompaction(ev: EventOf<'compaction'>): void {
  if (ev.channel !== state.key) return;
  const words = PASS_WORDS[ev.event];
  if (words) announce(`${ev.tier} ${words} in ${ev.channel}`);
  refreshSelected(!BEFORE_A_PASS.has(ev.event));
}

function onContext(ev: EventOf<'context'>): void {
  if (state.shown.has(ev.channel)) listReloadSoon();
  if (ev.channel === state.key) refreshSelected(true);
}

/** The summaries a take-back set aside were written again (or it failed, and stays pending). */
function onTakeBack(ev: EventOf<'takeback'>): void {
  if (state.shown.has(ev.channel)) listReloadSoon();
  if (ev.channel !== state.key) return;
  announce(`take-back ${ev.status} in ${ev.channel}`);
  refreshSelected(true);
}

export function connect(): void {
  const stream = new EventSource('/api/dashboard/events');
  const streamState = (text: string, className: string) => {
    const box = $('stream-state');
    box.textContent = text;
    box.className = className;
  };
  const on = <T extends DashboardEvent['type']>(type: T, handle: (ev: EventOf<T>) => void) =>
    stream.addEventListener(type, (e) => handle(JSON.parse((e as MessageEvent<string>).data) as EventOf<T>));
  stream.addEventListener('ready', () => streamState('live', 'stream live'));
  stream.onerror = () => streamState('reconnecting…', 'stream');
  on('turn', onTurn);
  on('compaction', onCompaction);
  on('context', onContext);
  on('takeback', onTakeBack);
}
