import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { msg } from '../../test/builders.js';
import { testPolicy } from '../../test/policy.js';
import type { ContextView } from '../model/model.js';
import { decideOnSilence, SILENCE_PASS_SHARE, type SilenceInput } from './decide-on-silence.js';

/** 100 raw messages of 10 tokens: 1,000 tokens, and a token is 0.001 of usage. */
function context(messages = 100): ContextView {
  const raw = Array.from({ length: messages }, (_, i) => msg(i + 1, 10));
  return { generation: 1, headSeq: messages, spans: [], raw, tokens: messages * 10 };
}

const policy = testPolicy({ protectRecent: 5, summaryMaxTokens: 50 });

function input(overrides: Partial<SilenceInput> = {}): SilenceInput {
  return {
    context: context(),
    usage: 0.7,
    usagePerToken: 0.001,
    summaryTokens: 50,
    policy,
    inFlight: [],
    ineffectivePasses: 0,
    ...overrides,
  };
}

describe('decideOnSilence', () => {
  it('compacts a cold channel that is due soon, and leaves one that is not', () => {
    const floor = SILENCE_PASS_SHARE * policy.backgroundThreshold; // 0.6
    expect(decideOnSilence(input({ usage: floor - 0.01 }))).toEqual({ kind: 'none' });
    const due = decideOnSilence(input({ usage: floor }));
    expect(due).toMatchObject({ kind: 'enqueue', plan: { tier: 'background', fromSeq: 1 } });
  });

  it('plans the pass the threshold would: the background fraction, aggressive above its threshold', () => {
    const background = decideOnSilence(input({ usage: 0.7 }));
    const aggressive = decideOnSilence(input({ usage: 0.9 }));
    if (background.kind !== 'enqueue' || aggressive.kind !== 'enqueue') throw new Error('expected passes');
    expect(aggressive.plan.tier).toBe('aggressive');
    // 30% of 1,000 tokens plus the 50-token summary that replaces it; 50% for aggressive.
    expect(background.plan.toSeq).toBe(35);
    expect(aggressive.plan.toSeq).toBe(55);
  });

  it('leaves a channel alone with a pass in flight or after passes that did not help', () => {
    const inFlight = [{ jobId: 'p1', tier: 'background', fromSeq: 1, toSeq: 30, running: false }] as const;
    expect(decideOnSilence(input({ usage: 0.9, inFlight }))).toEqual({ kind: 'none' });
    expect(decideOnSilence(input({ usage: 0.9, ineffectivePasses: 3 }))).toEqual({ kind: 'none' });
  });

  it('plans nothing for a context the protected messages fill', () => {
    expect(decideOnSilence(input({ context: context(5), usage: 0.9 }))).toEqual({ kind: 'none' });
  });

  test.prop([fc.integer({ min: 0, max: 300 }), fc.double({ min: 0, max: 1, noNaN: true })])(
    'a pass on silence never covers the protected messages and always frees more than its summary',
    (messages, usage) => {
      const cold = input({ context: context(messages), usage });
      const action = decideOnSilence(cold);
      if (action.kind === 'none') return;
      expect(usage).toBeGreaterThanOrEqual(SILENCE_PASS_SHARE * policy.backgroundThreshold);
      expect(action.plan.toSeq).toBeLessThanOrEqual(messages - policy.protectRecent);
      const covered = (action.plan.toSeq - action.plan.fromSeq + 1) * 10;
      expect(covered).toBeGreaterThan(cold.summaryTokens);
    },
  );
});
