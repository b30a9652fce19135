/** The channel overview's line of pending take-backs: a count, the oldest's kind and age, gone at 0. */
import { describe, expect, it } from 'vitest';
import { span, spendLimitsText, takeBacksText } from './format.js';

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

describe('spendLimitsText', () => {
  it('says each limit with its spend, and when a reached one resets', () => {
    expect(
      spendLimitsText([
        {
          scope: 'channel',
          period: 'day',
          limitUsd: 3,
          spentUsd: 2.10341,
          resetsAt: '2026-12-05T00:00:00.000Z',
        },
        {
          scope: 'workspace',
          period: 'month',
          limitUsd: 200,
          spentUsd: 200.5,
          resetsAt: '2027-01-01T00:00:00.000Z',
        },
      ]),
    ).toBe(
      '$2.1034 of $3.00 today for this channel · $200.5000 of $200.00 this month for its workspace, reached: resets 2027-01-01 00:00 UTC',
    );
    expect(spendLimitsText(null)).toBe('');
  });
});
