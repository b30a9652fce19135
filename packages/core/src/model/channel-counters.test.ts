import { describe, expect, it } from 'vitest';
import { run, summary, truncated } from '../../test/builders.js';
import {
  contextTotal,
  countersAfterSplice,
  countersAfterTruncation,
  countersOf,
} from './channel-counters.js';
import type { TruncationPlan } from './context-writes.js';
import { WorkingContext } from './working-context.js';

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

describe('the counters after a splice and a truncation', () => {
  const context = () =>
    new WorkingContext({
      generation: 2,
      spans: [summary(1, 5, 40), truncated(6, 9, 12)],
      raw: run(10, 20, 7),
    });

  it('are what the working context holds after it applies the same plan', () => {
    const splicing = context();
    const before = countersOf(splicing.view());
    const spans = [summary(1, 14, 30)];
    const after = countersAfterSplice(before, { spans }, 5 * 7);
    splicing.applySplice({ kind: 'splice', generation: 2, spans, dropRawThrough: 14 });
    expect(after).toEqual(countersOf(splicing.view()));
    expect(after).toEqual({ generation: 3, headSeq: 20, prefixEnd: 14, spanTokens: 30, rawTokens: 42 });

    // A cut that extends the truncated span at the end: its marker replaces that span's.
    const cutting = context();
    const plan: TruncationPlan = {
      kind: 'truncate',
      generation: 2,
      droppedMessages: 4,
      fromSeq: 6,
      toSeq: 13,
      extendsLast: true,
      droppedTokens: 4 * 7,
      markerTokens: 15,
    };
    const cut = countersAfterTruncation(countersOf(cutting.view()), plan, 12);
    cutting.applyTruncation(plan);
    expect(cut).toEqual(countersOf(cutting.view()));
    expect(cut).toMatchObject({ generation: 3, prefixEnd: 13, spanTokens: 40 + 15, rawTokens: 7 * 7 });
    // One that starts a span of its own keeps the one before.
    expect(
      countersAfterTruncation(countersOf(context().view()), { ...plan, extendsLast: false }, 12),
    ).toMatchObject({ spanTokens: 52 + 15 });
  });
});
