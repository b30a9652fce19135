/** What the platform is answered for a change (`changeResult`), as a pure function of its report. */
import { expect, it } from 'vitest';
import { type ChangeReport, changeResult, NOTHING } from './change-report.js';

const applied: ChangeReport = {
  kind: 'deleted',
  outcome: 'applied',
  messages: 3,
  replies: 1,
  copies: 1,
  raw: 2,
  memories: 4,
  checkpoints: 5,
  summaries: 2,
  takeBacks: ['tb-1', 'tb-2'],
};

it('answers an applied change with what it reached, the summaries still pending, and its first take-back', () => {
  expect(changeResult(applied)).toEqual({
    outcome: 'applied',
    takeBack: 'tb-1',
    reached: { messages: 3, memories: 4, checkpoints: 5, summaries: 2 },
    pending: 2,
  });
});

it('answers a change that reached nothing with its outcome, and the take-back still pending if any', () => {
  expect(changeResult({ kind: 'edited', outcome: 'ignored', ...NOTHING })).toEqual({ outcome: 'ignored' });
  expect(changeResult({ kind: 'deleted', outcome: 'unchanged', ...NOTHING, takeBacks: ['tb-9'] })).toEqual({
    outcome: 'unchanged',
    takeBack: 'tb-9',
  });
});
