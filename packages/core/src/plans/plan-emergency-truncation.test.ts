import { describe, expect, it } from 'vitest';
import { run, summary, toolCall, toolResult, truncated } from '../../test/builders.js';
import { WorkingContext } from '../model/working-context.js';
import { planEmergencyTruncation, truncationIsStale } from './plan-emergency-truncation.js';

describe('planEmergencyTruncation', () => {
  it('sets aside the oldest raw messages, half the context by tokens', () => {
    const ctx = new WorkingContext({ spans: [summary(1, 10, 100)], raw: run(11, 100) }); // 1,000 tokens
    const plan = planEmergencyTruncation({
      context: ctx.view(),
      fraction: 0.5,
      protectRecent: 10,
      markerTokens: 12,
    });
    expect(plan).toMatchObject({
      kind: 'truncate',
      fromSeq: 11,
      toSeq: 60,
      droppedMessages: 50,
      droppedTokens: 500,
    });
    if (plan.kind !== 'truncate') return;
    const outcome = ctx.applyTruncation(plan);
    expect(outcome).toEqual({ tokensBefore: 1000, tokensAfter: 100 + 12 + 400, messagesRemoved: 50 });
    expect(ctx.view().spans.at(-1)).toMatchObject({
      kind: 'truncated',
      fromSeq: 11,
      toSeq: 60,
      createdGeneration: 1,
    });
  });

  it('extends a truncated span it follows instead of stacking markers', () => {
    const ctx = new WorkingContext({ spans: [truncated(1, 20, 12)], raw: run(21, 60) });
    const plan = planEmergencyTruncation({
      context: ctx.view(),
      fraction: 0.5,
      protectRecent: 0,
      markerTokens: 12,
    });
    expect(plan).toMatchObject({ fromSeq: 1, extendsLast: true });
    if (plan.kind !== 'truncate') return;
    ctx.applyTruncation(plan);
    expect(ctx.view().spans).toHaveLength(1);
    expect(ctx.tokens).toBe(12 + (60 - plan.toSeq) * 10);
  });

  it('keeps protect_recent and tool pairs, and says when nothing can go', () => {
    const raw = [...run(1, 2), toolCall(3, 10, ['a']), toolResult(4, 10, 'a'), ...run(5, 8)];
    const ctx = new WorkingContext({ raw });
    const plan = planEmergencyTruncation({
      context: ctx.view(),
      fraction: 0.3,
      protectRecent: 5,
      markerTokens: 1,
    });
    expect(plan).toMatchObject({ toSeq: 2 });
    const none = planEmergencyTruncation({
      context: ctx.view(),
      fraction: 0.5,
      protectRecent: 8,
      markerTokens: 1,
    });
    expect(none).toEqual({ kind: 'nothing', reason: 'all_protected' });
  });

  it('cuts nothing on a context past the generation the cut was decided on', () => {
    const ctx = new WorkingContext({ generation: 2, raw: run(1, 20) });
    const input = { context: ctx.view(), fraction: 0.5, protectRecent: 4, markerTokens: 12 };
    expect(planEmergencyTruncation({ ...input, expectedGeneration: 1 })).toEqual({
      kind: 'nothing',
      reason: 'stale',
    });
    expect(planEmergencyTruncation({ ...input, expectedGeneration: 2 })).toMatchObject({
      kind: 'truncate',
      generation: 2,
    });
    // Stale comes first: a moved-on context is not judged at all.
    const empty = new WorkingContext({ generation: 2, spans: [truncated(1, 20, 12)] });
    expect(planEmergencyTruncation({ ...input, context: empty.view(), expectedGeneration: 1 })).toEqual({
      kind: 'nothing',
      reason: 'stale',
    });
  });
});

describe('truncationIsStale', () => {
  it('refuses a cut decided on another generation, and takes one decided on this or none', () => {
    expect(truncationIsStale(3, { expectedGeneration: 2 })).toBe(true);
    expect(truncationIsStale(3, { expectedGeneration: 4 })).toBe(true);
    expect(truncationIsStale(3, { expectedGeneration: 3 })).toBe(false);
    expect(truncationIsStale(3, {})).toBe(false);
  });
});
