import { describe, expect, it } from 'vitest';
import { msg, run, summary, toolCall, toolResult, truncated } from '../test/builders.js';
import { planCompaction, planHeal } from './plan-compaction.js';
import { WorkingContext } from './working-context.js';

describe('planCompaction', () => {
  it('takes the oldest fraction of the context by tokens, on a message boundary', () => {
    const ctx = new WorkingContext({ raw: run(1, 100) }); // 1,000 tokens
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.3,
      protectRecent: 10,
    });
    expect(result).toEqual({
      kind: 'plan',
      plan: { tier: 'background', fromSeq: 1, toSeq: 30, generation: 0, tokensCovered: 300, rawMessages: 30 },
    });
  });

  it('counts by tokens, not messages: one large message can meet the target alone', () => {
    const ctx = new WorkingContext({ raw: [msg(1, 600), ...run(2, 41)] });
    const result = planCompaction({
      context: ctx.view(),
      tier: 'aggressive',
      fraction: 0.5,
      protectRecent: 5,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(1);
  });

  it('folds earlier spans into the new summary', () => {
    const ctx = new WorkingContext({
      spans: [summary(1, 50, 100), truncated(51, 60, 10)],
      raw: run(61, 150),
    });
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.3,
      protectRecent: 10,
    });
    if (result.kind !== 'plan') throw new Error(result.kind);
    expect(result.plan.fromSeq).toBe(1);
    // 110 tokens of spans, then raw messages until 30% of 1,010 tokens is covered.
    expect(result.plan.tokensCovered).toBeGreaterThanOrEqual(303);
    expect(result.plan.toSeq).toBe(80);
  });

  it('never touches the newest protect_recent messages', () => {
    const ctx = new WorkingContext({ raw: run(1, 12) });
    const result = planCompaction({
      context: ctx.view(),
      tier: 'aggressive',
      fraction: 0.9,
      protectRecent: 10,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(2);
    const none = planCompaction({
      context: ctx.view(),
      tier: 'aggressive',
      fraction: 0.9,
      protectRecent: 12,
    });
    expect(none).toEqual({ kind: 'nothing', reason: 'all_protected' });
  });

  it('never separates a tool call from its results', () => {
    const raw = [
      ...run(1, 3),
      toolCall(4, 10, ['a', 'b']),
      toolResult(5, 10, 'a'),
      toolResult(6, 10, 'b'),
      ...run(7, 20),
    ];
    const ctx = new WorkingContext({ raw });
    // The target falls on seq 4 or 5; the cut moves past both results.
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.22,
      protectRecent: 2,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(6);
    // When moving forward would enter the protected messages, the cut moves back before the call.
    const tight = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.22,
      protectRecent: 15,
    });
    expect(tight.kind === 'plan' && tight.plan.toSeq).toBe(3);
  });

  it('never cuts right after a tool call whose results have not arrived yet', () => {
    const ctx = new WorkingContext({ raw: [...run(1, 3), toolCall(4, 10, ['a'])] });
    const result = planCompaction({
      context: ctx.view(),
      tier: 'aggressive',
      fraction: 0.95,
      protectRecent: 0,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(3);
  });

  it('heals a truncated span even when every raw message is protected', () => {
    const ctx = new WorkingContext({ spans: [truncated(1, 30)], raw: run(31, 35) });
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.3,
      protectRecent: 10,
    });
    expect(result.kind === 'plan' && [result.plan.fromSeq, result.plan.toSeq]).toEqual([1, 30]);
    expect(planHeal(ctx.view())).toMatchObject({ tier: 'emergency', fromSeq: 1, toSeq: 30, rawMessages: 0 });
    expect(planHeal(new WorkingContext({ spans: [summary(1, 30, 5)] }).view())).toBeUndefined();
  });
});
