import { describe, expect, it } from 'vitest';
import { run, summary, truncated } from '../../test/builders.js';
import { WorkingContext } from '../model/working-context.js';
import { contextTotal, countersOf } from './channel-counters.js';

describe('countersOf', () => {
  it('splits a loaded context into the channel row’s counters', () => {
    const context = new WorkingContext({
      generation: 4,
      spans: [summary(1, 5, 40), truncated(6, 9, 12)],
      raw: run(10, 14, 7),
    });
    const counters = countersOf(context.view());
    expect(counters).toEqual({ generation: 4, headSeq: 14, prefixEnd: 9, spanTokens: 52, rawTokens: 35 });
    expect(contextTotal(counters)).toBe(context.tokens);
  });

  it('gives an empty prefix the end 0', () => {
    expect(countersOf(new WorkingContext({ raw: run(1, 2) }).view())).toMatchObject({
      prefixEnd: 0,
      spanTokens: 0,
      rawTokens: 20,
    });
  });
});
