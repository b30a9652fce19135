import { describe, expect, it } from 'vitest';
import { run, summary, truncated } from '../../test/builders.js';
import { countersOf } from '../model/channel-counters.js';
import { WorkingContext } from '../model/working-context.js';
import { planSummaryReplacement } from './plan-summary-replacement.js';

describe('planSummaryReplacement', () => {
  // Summary j1 over 1..4 (20 tokens), a marker over 5..6, summary j2 over 7..8, raw 9..10: generation 3.
  const spans = [summary(1, 4, 20, 1, 'j1'), truncated(5, 6, 12), summary(7, 8, 9, 3, 'j2')];
  const channel = countersOf(new WorkingContext({ generation: 3, spans, raw: run(9, 10) }).view());
  const rewrite = {
    fromSeq: 1,
    toSeq: 4,
    text: 'S1 redacted',
    tokens: 15,
    jobId: 'forget-1',
    replaces: 'j1',
  };

  it('puts the new span in place of the one job `replaces` wrote: the span total moves by the difference', () => {
    expect(planSummaryReplacement(channel, spans, rewrite)).toEqual({
      kind: 'replace',
      replaced: spans[0],
      span: {
        kind: 'summary',
        fromSeq: 1,
        toSeq: 4,
        text: 'S1 redacted',
        tokens: 15,
        createdGeneration: 4,
        jobId: 'forget-1',
      },
      generation: 4,
      spanTokens: 15 + 12 + 9,
      tokensBefore: 20 + 12 + 9 + 20,
      tokensAfter: 15 + 12 + 9 + 20,
    });
  });

  it('hands back the very span it replaces, so a store finds its row by it', () => {
    const plan = planSummaryReplacement(channel, spans, { ...rewrite, fromSeq: 7, toSeq: 8, replaces: 'j2' });
    expect(plan.kind === 'replace' && plan.replaced).toBe(spans[2]);
  });

  it('is missing when that span is no longer the active one over exactly the range', () => {
    const missing = { kind: 'missing' };
    // A pass replaced it meanwhile (another job's span over the range).
    expect(planSummaryReplacement(channel, spans, { ...rewrite, replaces: 'j0' })).toEqual(missing);
    // A wider pass folded it.
    expect(planSummaryReplacement(channel, spans, { ...rewrite, toSeq: 6 })).toEqual(missing);
    // A truncation marker holds no summary to write again.
    expect(
      planSummaryReplacement(channel, spans, { ...rewrite, fromSeq: 5, toSeq: 6, replaces: '' }),
    ).toEqual(missing);
    expect(planSummaryReplacement(undefined, [], rewrite)).toEqual(missing);
  });
});
