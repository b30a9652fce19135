/**
 * What a metric may be given. A counter refuses a negative increment and a label value is a series
 * of its own, so values are clamped and free text is bounded here, once for every recorder.
 */

/** A code or name that can safely be a label value; anything else is counted as `other`. */
const LABEL_VALUE = /^[A-Za-z0-9_.-]{1,48}$/;

/** `value` as a label value, or `other` when it could blow up the cardinality or the exposition. */
export function boundedLabel(value: string): string {
  return LABEL_VALUE.test(value) ? value : 'other';
}

/** A non-negative finite count (a counter refuses a negative increment). */
export function count(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

export function seconds(ms: number): number {
  return count(ms) / 1000;
}
