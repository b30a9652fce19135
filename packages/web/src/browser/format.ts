/**
 * Number and time formats of the page: pure (no DOM), so the modules that only turn the API's answers
 * into text can be unit-tested under Node (`dom.ts` re-exports them for the rest).
 */

export const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
export const num = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : n.toLocaleString('en');
export const plural = (n: number, word: string) => `${num(n)} ${word}${n === 1 ? '' : 's'}`;
export const clock = (ms: number) => new Date(ms).toLocaleTimeString('en-GB');
