import { describe, expect, it } from 'vitest';
import { run, summary, truncated } from '../../test/builders.js';
import { WorkingContext } from '../model/working-context.js';
import { planSplice, rawTokensThrough, type SummaryResult } from './plan-splice.js';

const result = (fromSeq: number, toSeq: number, jobId = 'job-new', tokens = 20): SummaryResult => ({
  jobId,
  fromSeq,
  toSeq,
  text: `summary ${fromSeq}..${toSeq}`,
  tokens,
});

/** `planSplice` on a loaded context, told what the raw messages it would drop hold. */
function splice(ctx: WorkingContext, summaryResult: SummaryResult) {
  const view = ctx.view();
  return planSplice(view, summaryResult, rawTokensThrough(view.raw, summaryResult.toSeq));
}

describe('planSplice', () => {
  it('replaces the folded summary and the raw messages it covers', () => {
    const ctx = new WorkingContext({ generation: 3, spans: [summary(1, 10, 30)], raw: run(11, 40) });
    const plan = splice(ctx, result(1, 25));
    expect(plan.kind).toBe('splice');
    if (plan.kind !== 'splice') return;
    expect(plan.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 25]]);
    expect(plan.spans[0]).toMatchObject({ createdGeneration: 4, jobId: 'job-new' });
    const outcome = ctx.applySplice(plan);
    expect(outcome).toEqual({ tokensBefore: 330, tokensAfter: 20 + 15 * 10, messagesRemoved: 15 });
    expect(ctx.view().raw[0]?.seq).toBe(26);
    expect(ctx.generation).toBe(4);
  });

  it('trims a truncated span made while the job ran to the part the summary does not cover', () => {
    // Planned over 1..25 when the prefix ended at 10; an emergency then set aside 11..30.
    const ctx = new WorkingContext({
      generation: 4,
      spans: [summary(1, 10, 30), truncated(11, 30, 12, 4)],
      raw: run(31, 40),
    });
    const plan = splice(ctx, result(1, 25));
    if (plan.kind !== 'splice') throw new Error(plan.kind);
    expect(plan.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([
      ['summary', 1, 25],
      ['truncated', 26, 30],
    ]);
    expect(plan.dropRawThrough).toBe(25);
    ctx.applySplice(plan);
    expect(ctx.view().raw.map((m) => m.seq)).toEqual(run(31, 40).map((m) => m.seq));
  });

  it('is stale when the summary is larger than what it would replace now: a pass never grows the context', () => {
    // Planned over 1..25 (a 30-token summary and 150 raw tokens); an emergency set 11..30 aside meanwhile.
    const ctx = new WorkingContext({
      spans: [summary(1, 10, 30), truncated(11, 30, 12, 4)],
      raw: run(31, 40),
    });
    expect(splice(ctx, result(1, 25, 'job-new', 31))).toEqual({
      kind: 'stale',
      reason: 'the summary (31 tokens) is larger than the 30 tokens it would replace',
    });
    expect(splice(ctx, result(1, 25, 'job-new', 30)).kind).toBe('splice');
  });

  it('heals a truncated span it covers entirely', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 10, 30), truncated(11, 30)], raw: run(31, 35) });
    const plan = splice(ctx, result(1, 30));
    if (plan.kind !== 'splice') throw new Error(plan.kind);
    expect(plan.spans.map((s) => s.kind)).toEqual(['summary']);
  });

  it('is stale when a summary that reaches past its range is in place', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 40, 30, 5, 'job-wider')], raw: run(41, 50) });
    expect(splice(ctx, result(1, 25))).toEqual({
      kind: 'stale',
      reason: 'summary 1..40 reaches outside 1..25',
    });
  });

  it('supersedes a newer summary of a sub-range, whose sources it saw too', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 20, 30, 6, 'job-narrow')], raw: run(21, 50) });
    const plan = splice(ctx, result(1, 35));
    if (plan.kind !== 'splice') throw new Error(plan.kind);
    expect(plan.spans).toHaveLength(1);
    expect(plan.spans[0]).toMatchObject({ fromSeq: 1, toSeq: 35, jobId: 'job-new' });
  });

  it('does nothing for a job applied already, or a range summarized already', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 20, 30, 6, 'job-new')], raw: run(21, 30) });
    expect(splice(ctx, result(1, 20)).kind).toBe('noop');
    expect(splice(ctx, result(1, 20, 'job-other')).kind).toBe('noop');
  });

  it('is stale for a range beyond the archive', () => {
    const ctx = new WorkingContext({ raw: run(1, 5) });
    expect(splice(ctx, result(1, 9)).kind).toBe('stale');
  });

  it('is refused by a context whose generation moved on since the plan', () => {
    const ctx = new WorkingContext({ raw: run(1, 20) });
    const plan = splice(ctx, result(1, 10));
    if (plan.kind !== 'splice') throw new Error(plan.kind);
    ctx.applySplice(plan);
    expect(() => ctx.applySplice(plan)).toThrow(/generation 0, context is at 1/);
  });
});
