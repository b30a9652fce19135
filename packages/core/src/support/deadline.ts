/**
 * The one way Ebb waits for something with a time limit: race it against a timer that is always
 * cleared. The work is never cancelled (a PING on a dead socket, a worker's close, a turn cannot be);
 * its late result is ignored, and a late rejection never surfaces as an unhandled one.
 */

import { CoreError } from './errors.js';

/** How `settleWithin` ended: the value in time, or not done yet. */
export type Deadline<T> = { readonly done: true; readonly value: T } | { readonly done: false };

/** `work`'s value if it settles within `ms`; `{ done: false }` otherwise. A rejection in time rejects. */
export async function settleWithin<T>(work: Promise<T>, ms: number): Promise<Deadline<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Deadline<T>>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), Math.max(0, ms));
  });
  // The race is `inTime`'s handler, so its late rejection is handled, never unhandled.
  const inTime = work.then((value): Deadline<T> => ({ done: true, value }));
  try {
    return await Promise.race([inTime, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise that did not settle within its time. */
export class TimeoutError extends CoreError {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`, { code: 'timeout', retryable: true });
  }
}

/** `work`'s value, or a `TimeoutError` after `ms`, whichever comes first. */
export async function withTimeout<T>(work: () => Promise<T>, ms: number): Promise<T> {
  const outcome = await settleWithin(Promise.resolve().then(work), ms);
  if (!outcome.done) throw new TimeoutError(ms);
  return outcome.value;
}
