/** The channel overview's line of pending take-backs: a count, the oldest's kind and age, gone at 0. */
import { describe, expect, it } from 'vitest';
import { span, takeBacksText } from './format.js';

const now = Date.parse('2026-11-27T10:00:00.000Z');
const before = (ms: number) => new Date(now - ms).toISOString();

describe('takeBacksText', () => {
  it('says how many are pending and the oldest kind and age', () => {
    expect(takeBacksText({ pending: 2, oldest: { kind: 'deleted', createdAt: before(41_000) } }, now)).toBe(
      '2 take-backs pending (oldest: deletion, 41 s ago): summaries over what they took back are being written again',
    );
    expect(
      takeBacksText({ pending: 1, oldest: { kind: 'edited', createdAt: before(5 * 60_000) } }, now),
    ).toBe(
      '1 take-back pending (oldest: edit, 5 min ago): summaries over what it took back are being written again',
    );
  });

  it('is empty once none is left', () => {
    expect(takeBacksText({ pending: 0, oldest: null }, now)).toBe('');
  });
});

describe('span', () => {
  it('rounds to seconds, minutes, hours or days, never below 0', () => {
    expect([-5, 59_000, 61_000, 3 * 3_600_000, 2 * 86_400_000].map(span)).toEqual([
      '0 s',
      '59 s',
      '1 min',
      '3 h',
      '2 d',
    ]);
  });
});
