/**
 * Number and time formats of the page: pure (no DOM), so the modules that only turn the API's answers
 * into text can be unit-tested under Node (`dom.ts` re-exports them for the rest).
 */
import { resetText, TAKE_BACK_KIND_WORDS } from '@ebb/core';
import type { DashboardSpendLimit, DashboardTakeBacks } from '../dashboard-api.js';

export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
export const num = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : n.toLocaleString('en');
export const plural = (n: number, word: string) => `${num(n)} ${word}${n === 1 ? '' : 's'}`;
export const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');

/** How long `ms` milliseconds are, roughly: `41 s`, `5 min`, `3 h`, `2 d`. */
export function span(ms: number): string {
  const s = Math.max(0, ms / 1000);
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/**
 * A channel's pending take-backs in a sentence (`now`: epoch ms); empty when none is left, so the
 * line goes once the last one completes.
 */
/**
 * The channel's spend limits (`[budget]`): `$2.1034 of $3.00 today for this channel · $45.10 of
 * $200.00 this month for its workspace, reached: resets 2027-01-01 00:00 UTC`; empty with none.
 */
export function spendLimitsText(limits: readonly DashboardSpendLimit[] | null): string {
  return (limits ?? [])
    .map((l) => {
      const period = l.period === 'day' ? 'today' : 'this month';
      const whose = l.scope === 'channel' ? 'this channel' : 'its workspace';
      const reached = l.spentUsd >= l.limitUsd ? `, reached: resets ${resetText(new Date(l.resetsAt))}` : '';
      return `$${l.spentUsd.toFixed(4)} of $${l.limitUsd.toFixed(2)} ${period} for ${whose}${reached}`;
    })
    .join(' · ');
}

export function takeBacksText(t: DashboardTakeBacks, now: number): string {
  if (t.pending === 0) return '';
  const oldest =
    t.oldest === null
      ? ''
      : ` (oldest: ${TAKE_BACK_KIND_WORDS[t.oldest.kind]}, ${span(now - Date.parse(t.oldest.createdAt))} ago)`;
  return `${plural(t.pending, 'take-back')} pending${oldest}: summaries over what ${t.pending === 1 ? 'it' : 'they'} took back are being written again`;
}
