import { describe, expect, it } from 'vitest';
import { msg, run, summary, toolCall, toolResult, truncated } from '../../test/builders.js';
import { WorkingContext } from '../model/working-context.js';
import { planCompaction, planHeal } from './plan-compaction.js';

describe('planCompaction', () => {
  it('takes the oldest fraction of the context by tokens, on a message boundary', () => {
    const ctx = new WorkingContext({ raw: run(1, 100) }); // 1,000 tokens
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.3,
      protectRecent: 10,
      summaryTokens: 0,
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
      summaryTokens: 0,
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
      summaryTokens: 0,
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
      summaryTokens: 0,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(2);
    const none = planCompaction({
      context: ctx.view(),
      tier: 'aggressive',
      fraction: 0.9,
      protectRecent: 12,
      summaryTokens: 0,
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
      summaryTokens: 0,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(6);
    // When moving forward would enter the protected messages, the cut moves back before the call.
    const tight = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.22,
      protectRecent: 15,
      summaryTokens: 0,
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
      summaryTokens: 0,
    });
    expect(result.kind === 'plan' && result.plan.toSeq).toBe(3);
  });

  it('sizes a pass by what it frees: the fraction of the context plus the summary that replaces it', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 50, 100)], raw: run(51, 150) }); // 1,100 tokens
    const result = planCompaction({
      context: ctx.view(),
      tier: 'background',
      fraction: 0.3,
      protectRecent: 10,
      summaryTokens: 120,
    });
    if (result.kind !== 'plan') throw new Error(result.kind);
    // 30% of 1,100 = 330 freed once a summary of up to 120 replaces the range: 450 covered.
    expect(result.plan).toMatchObject({ fromSeq: 1, toSeq: 85, tokensCovered: 450 });
  });

  it('plans no pass whose range holds no more than its summary: it would make the context bigger', () => {
    // 150 tokens may go (the newest 10 are protected), and a summary may take 150.
    const ctx = new WorkingContext({ raw: run(1, 25) });
    const plan = (summaryTokens: number) =>
      planCompaction({
        context: ctx.view(),
        tier: 'aggressive',
        fraction: 0.5,
        protectRecent: 10,
        summaryTokens,
      });
    expect(plan(150)).toEqual({ kind: 'nothing', reason: 'nothing_to_free' });
    // With a smaller summary it takes everything it may.
    expect(plan(140)).toMatchObject({ kind: 'plan', plan: { toSeq: 15, tokensCovered: 150 } });
  });

  it('heals a truncated span with the oldest raw messages, so the summary frees tokens, or waits for them', () => {
    const ctx = new WorkingContext({ spans: [truncated(1, 30)], raw: run(31, 60) });
    // The 10-token marker and raw messages until more than the 45-token summary is covered.
    expect(planHeal(ctx.view(), { protectRecent: 10, summaryTokens: 45 })).toMatchObject({
      tier: 'emergency',
      fromSeq: 1,
      toSeq: 34,
      tokensCovered: 50,
      rawMessages: 4,
    });
    // Every raw message protected: a summary in place of the marker alone would grow the context.
    const protectedRaw = new WorkingContext({ spans: [truncated(1, 30)], raw: run(31, 35) });
    expect(planHeal(protectedRaw.view(), { protectRecent: 10, summaryTokens: 45 })).toBeUndefined();
    expect(
      planCompaction({
        context: protectedRaw.view(),
        tier: 'background',
        fraction: 0.3,
        protectRecent: 10,
        summaryTokens: 45,
      }),
    ).toEqual({ kind: 'nothing', reason: 'nothing_to_free' });
    // Nothing to heal.
    const healed = new WorkingContext({ spans: [summary(1, 30, 5)], raw: run(31, 60) });
    expect(planHeal(healed.view(), { protectRecent: 0, summaryTokens: 0 })).toBeUndefined();
  });
});
