import { describe, expect, it } from 'vitest';
import { testPolicy } from '../test/policy.js';
import { CompactionMonitor } from './compaction-monitor.js';
import { decideTier, type TierInput } from './decide-tier.js';

const policy = testPolicy();

const idle: Omit<TierInput, 'usage'> = {
  policy,
  now: 100_000,
  lastEnqueuedAt: undefined,
  ineffectivePasses: 0,
  jobInFlight: false,
  needsHeal: false,
};

describe('decideTier', () => {
  it.each([
    [0.5, { kind: 'none' }],
    [0.8, { kind: 'compact', tier: 'background' }],
    [0.849, { kind: 'compact', tier: 'background' }],
    [0.85, { kind: 'compact', tier: 'aggressive' }],
    [0.95, { kind: 'emergency' }],
    [1.4, { kind: 'emergency' }],
  ])('usage %f → %o', (usage, decision) => {
    expect(decideTier({ ...idle, usage })).toEqual(decision);
  });

  it('never holds back an emergency', () => {
    expect(
      decideTier({ ...idle, usage: 0.96, jobInFlight: true, lastEnqueuedAt: idle.now, ineffectivePasses: 9 }),
    ).toEqual({ kind: 'emergency' });
  });

  it('skips while a job is in flight, during the cooldown, and after too many ineffective passes', () => {
    expect(decideTier({ ...idle, usage: 0.9, jobInFlight: true })).toEqual({
      kind: 'skip',
      tier: 'aggressive',
      reason: 'in_flight',
    });
    expect(decideTier({ ...idle, usage: 0.8, lastEnqueuedAt: idle.now - 9_999 })).toEqual({
      kind: 'skip',
      tier: 'background',
      reason: 'cooldown',
    });
    expect(decideTier({ ...idle, usage: 0.8, lastEnqueuedAt: idle.now - 10_000 })).toEqual({
      kind: 'compact',
      tier: 'background',
    });
    expect(decideTier({ ...idle, usage: 0.8, ineffectivePasses: 3 })).toEqual({
      kind: 'skip',
      tier: 'background',
      reason: 'ineffective',
    });
  });

  it('heals a truncated span once no job is in flight, whatever the usage', () => {
    expect(decideTier({ ...idle, usage: 0.4, needsHeal: true })).toEqual({ kind: 'heal' });
    expect(decideTier({ ...idle, usage: 0.4, needsHeal: true, jobInFlight: true })).toEqual({ kind: 'none' });
  });
});

describe('CompactionMonitor', () => {
  it('counts passes that did not help, stops, and starts again once usage falls', () => {
    const monitor = new CompactionMonitor();
    const input = { usage: 0.82, now: 0, jobInFlight: false, needsHeal: false };
    for (let i = 0; i < 3; i++) {
      expect(monitor.decide({ ...policy, cooldownMs: 0 }, input).decision.kind).toBe('compact');
      expect(monitor.passCompleted(policy, 0.81)).toBe(false);
    }
    expect(monitor.decide({ ...policy, cooldownMs: 0 }, input)).toEqual({
      decision: { kind: 'skip', tier: 'background', reason: 'ineffective' },
      report: true,
    });
    // The same skip is reported once, not every turn.
    expect(monitor.decide({ ...policy, cooldownMs: 0 }, input).report).toBe(false);
    monitor.decide(policy, { ...input, usage: 0.5 });
    expect(monitor.ineffectivePasses).toBe(0);
    expect(monitor.decide({ ...policy, cooldownMs: 0 }, input).decision.kind).toBe('compact');
  });

  it('applies the cooldown from the last enqueued pass', () => {
    const monitor = new CompactionMonitor();
    monitor.enqueued(1_000);
    const input = { usage: 0.9, jobInFlight: false, needsHeal: false };
    expect(monitor.decide(policy, { ...input, now: 5_000 }).decision).toMatchObject({ reason: 'cooldown' });
    expect(monitor.decide(policy, { ...input, now: 11_000 }).decision).toEqual({
      kind: 'compact',
      tier: 'aggressive',
    });
  });
});
