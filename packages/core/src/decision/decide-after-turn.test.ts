import { describe, expect, it } from 'vitest';
import { msg, summary, truncated } from '../../test/builders.js';
import { testPolicy } from '../../test/policy.js';
import type { ContextView, Span } from '../model/model.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import { admitPass } from './admit-pass.js';
import { CompactionMonitor } from './compaction-monitor.js';
import { type AfterTurnInput, decideAfterTurn, earlyStartFloor } from './decide-after-turn.js';

/** A context of 100 raw messages of 10 tokens (1,000 tokens) after the given spans. */
function context(spans: Span[] = [], first = 1): ContextView {
  const raw = Array.from({ length: 100 }, (_, i) => msg(first + i, 10));
  const tokens = raw.length * 10 + spans.reduce((n, s) => n + s.tokens, 0);
  return { generation: 3, headSeq: first + 99, spans, raw, tokens };
}

const policy = testPolicy({ protectRecent: 5, summaryMaxTokens: 50 });
const calm = { growthPerSecond: 0, passSeconds: 10 };

/** Usage is given directly; the budget is 1,000 tokens, so a token is 0.001 of usage. */
function input(overrides: Partial<AfterTurnInput> = {}): AfterTurnInput {
  return {
    context: context(),
    usage: 0.5,
    usagePerToken: 0.001,
    summaryTokens: 50,
    policy,
    now: 100_000,
    inFlight: [],
    pace: calm,
    lastLandedAt: undefined,
    ineffectivePasses: 0,
    ...overrides,
  };
}

const running = (
  fromSeq: number,
  toSeq: number,
  tier: PassInFlight['tier'] = 'background',
): PassInFlight => ({
  jobId: `p${fromSeq}`,
  tier,
  fromSeq,
  toSeq,
  running: true,
});

describe('decideAfterTurn', () => {
  it('truncates at the emergency threshold whatever else holds', () => {
    const busy = { inFlight: [running(1, 30), running(31, 60)], ineffectivePasses: 9, lastLandedAt: 99_999 };
    expect(decideAfterTurn(input({ usage: 0.95, ...busy }))).toEqual({ kind: 'emergency' });
  });

  it('does nothing under the background threshold at a calm pace', () => {
    expect(decideAfterTurn(input({ usage: 0.79 }))).toEqual({ kind: 'none' });
  });

  it('queues a background pass from seq 1 at the background threshold and an aggressive one at the aggressive threshold', () => {
    const background = decideAfterTurn(input({ usage: 0.8 }));
    expect(background).toMatchObject({
      kind: 'enqueue',
      mode: 'new',
      delayMs: 0,
      plan: { tier: 'background', fromSeq: 1 },
    });
    const aggressive = decideAfterTurn(input({ usage: 0.85 }));
    expect(aggressive).toMatchObject({ kind: 'enqueue', plan: { tier: 'aggressive' } });
    // The aggressive fraction covers more of the context.
    if (background.kind !== 'enqueue' || aggressive.kind !== 'enqueue') throw new Error('expected passes');
    expect(aggressive.plan.toSeq).toBeGreaterThan(background.plan.toSeq);
  });

  it('starts early, at the aggressive size, when the pace says a pass would land past the aggressive threshold', () => {
    // 0.7 + 0.02/s × 10 s = 0.9 projected.
    const fast = { growthPerSecond: 0.02, passSeconds: 10 };
    const early = decideAfterTurn(input({ usage: 0.7, pace: fast }));
    expect(early).toMatchObject({ kind: 'enqueue', mode: 'new', plan: { tier: 'aggressive' } });
    expect(early.kind === 'enqueue' && early.projectedUsage).toBeCloseTo(0.9);
    // Never below the early-start floor (background − 2 × (emergency − background) = 0.5).
    expect(earlyStartFloor(policy)).toBeCloseTo(0.5);
    expect(decideAfterTurn(input({ usage: 0.49, pace: { growthPerSecond: 1, passSeconds: 10 } }))).toEqual({
      kind: 'none',
    });
  });

  it('starts no pass early while the stubs microcompaction will make would keep the projection under', () => {
    // Five tool results among the 100 messages (seqs 20, 40, …, 100); the newest three stay whole.
    const withResults = (tokens: number): ContextView => {
      const base = context();
      const raw = base.raw.map((m) =>
        m.seq % 20 === 0 ? { ...m, role: 'tool' as const, toolCallId: `c${m.seq}`, tokens } : m,
      );
      return { ...base, raw, tokens: raw.reduce((n, m) => n + m.tokens, 0) };
    };
    const stubbable = testPolicy({ protectRecent: 5, summaryMaxTokens: 50, microcompactMinTokens: 50 });
    // 0.55 + 0.027/s × 10 s = 0.82: due early, at the pace.
    const fast = { growthPerSecond: 0.027, passSeconds: 10 };
    const decide = (tokens: number, overrides: Partial<AfterTurnInput> = {}) =>
      decideAfterTurn(
        input({ context: withResults(tokens), usage: 0.55, pace: fast, policy: stubbable, ...overrides }),
      );
    // Two stubbable results of 250 tokens free at least 2 × (250 − 100): 0.82 − 0.3 is under 0.8.
    expect(decide(250)).toEqual({ kind: 'none' });
    // Of 110 tokens they free at least 20: not enough, so the pass starts early as before.
    expect(decide(110)).toMatchObject({ kind: 'enqueue', mode: 'new' });
    // Microcompaction off: nothing to wait for.
    expect(decide(250, { policy: { ...stubbable, microcompaction: false } })).toMatchObject({
      kind: 'enqueue',
    });
    // From microcompact_threshold they are made (rule 0), and the decision runs again after them.
    expect(decide(250, { usage: 0.6 })).toMatchObject({ kind: 'microcompact', seqs: [20, 40] });
  });

  it('delays a background pass by the cooldown counted from the last landing, never an aggressive one', () => {
    const landed = { lastLandedAt: 100_000 - 4_000 };
    expect(decideAfterTurn(input({ usage: 0.8, ...landed }))).toMatchObject({
      kind: 'enqueue',
      delayMs: 6_000,
    });
    expect(decideAfterTurn(input({ usage: 0.86, ...landed }))).toMatchObject({ kind: 'enqueue', delayMs: 0 });
    expect(decideAfterTurn(input({ usage: 0.8, lastLandedAt: 100_000 - 10_000 }))).toMatchObject({
      delayMs: 0,
    });
  });

  it('under a working size, waives the cooldown for a channel grown since the landing by what the pass frees', () => {
    const landed = { lastLandedAt: 100_000 - 4_000 };
    const working = { ...policy, workingTokens: 800 };
    // Landed at 0.62; now 0.8: grown 0.18, less than the 0.24 (30% of 0.8) this pass frees: a loop of
    // small passes is what the cooldown is for.
    expect(
      decideAfterTurn(input({ policy: working, usage: 0.8, usageAfterLanding: 0.62, ...landed })),
    ).toMatchObject({ delayMs: 6_000 });
    // Landed at 0.5: grown 0.3, its own messages made the pass due.
    expect(
      decideAfterTurn(input({ policy: working, usage: 0.8, usageAfterLanding: 0.5, ...landed })),
    ).toMatchObject({ kind: 'enqueue', delayMs: 0 });
    // At the window's edge (no working size) the cooldown holds: the pass escalates if it must.
    expect(decideAfterTurn(input({ usage: 0.8, usageAfterLanding: 0.5, ...landed }))).toMatchObject({
      delayMs: 6_000,
    });
  });

  it('under a working size, sizes a pass to bring a channel that outgrew it back under it', () => {
    // 1,000 tokens at 0.0008 a token: usage 0.8, no reserve; the working size sets the threshold at 0.3.
    const at = { usage: 0.8, usagePerToken: 0.0008 };
    const edge = decideAfterTurn(input(at));
    // 30% of the context plus the 50-token summary: the oldest 35 messages.
    expect(edge).toMatchObject({ kind: 'enqueue', plan: { tier: 'background', fromSeq: 1, toSeq: 35 } });
    const working = decideAfterTurn(
      input({ ...at, policy: { ...policy, backgroundThreshold: 0.3, workingTokens: 300 } }),
    );
    // To land at 0.7 × 0.3 = 0.21 (262 tokens), it frees 74% besides the summary: 79 messages.
    expect(working).toMatchObject({ kind: 'enqueue', plan: { tier: 'background', fromSeq: 1, toSeq: 79 } });
  });

  it('never frees less in an aggressive pass than a background pass would', () => {
    // A working size's fraction (0.7) above aggressive_fraction (0.5): the aggressive pass takes it.
    const working = { ...policy, backgroundFraction: 0.7, aggressiveFraction: 0.5, workingTokens: 800 };
    const aggressive = decideAfterTurn(input({ usage: 0.86, policy: working }));
    // 70% plus the 50-token summary: the oldest 75 messages.
    expect(aggressive).toMatchObject({
      kind: 'enqueue',
      plan: { tier: 'aggressive', fromSeq: 1, toSeq: 75 },
    });
    // At the window's edge the aggressive fraction is the larger: 50% plus the summary.
    expect(decideAfterTurn(input({ usage: 0.86 }))).toMatchObject({
      plan: { tier: 'aggressive', fromSeq: 1, toSeq: 55 },
    });
  });

  it('escalates a waiting pass of a lower tier, and leaves a running one alone when it is enough', () => {
    const waiting = { ...running(1, 30), running: false };
    expect(decideAfterTurn(input({ usage: 0.86, inFlight: [waiting] }))).toMatchObject({
      kind: 'enqueue',
      mode: 'escalate',
      plan: { tier: 'aggressive', fromSeq: 1 },
    });
    expect(decideAfterTurn(input({ usage: 0.81, inFlight: [waiting] }))).toMatchObject({
      kind: 'skip',
      reason: 'in_flight',
    });
    // A running background pass over 30 of 100 messages frees enough at a calm pace.
    expect(decideAfterTurn(input({ usage: 0.86, inFlight: [running(1, 30)] }))).toMatchObject({
      kind: 'skip',
      reason: 'in_flight',
    });
  });

  it('queues a follow-up over the next disjoint range when the running pass will not free enough in time', () => {
    // 0.86 + 0.01 × 10 − (100 − 50) × 0.001 = 0.91 ≥ 0.85 after the pass over seqs 1..10 lands.
    const fast = { growthPerSecond: 0.01, passSeconds: 10 };
    const action = decideAfterTurn(input({ usage: 0.86, pace: fast, inFlight: [running(1, 10)] }));
    expect(action).toMatchObject({ kind: 'enqueue', mode: 'follow_up', after: 'p1', plan: { fromSeq: 11 } });
    // Never a follow-up of a follow-up: the next pass starts at the front again.
    const headLanded = context([summary(1, 10, 20)], 11);
    expect(
      decideAfterTurn(input({ context: headLanded, usage: 0.86, pace: fast, inFlight: [running(11, 40)] })),
    ).toMatchObject({ kind: 'skip', reason: 'in_flight' });
    // At most two passes in flight.
    expect(
      decideAfterTurn(input({ usage: 0.9, pace: fast, inFlight: [running(1, 10), running(11, 20)] })),
    ).toMatchObject({ kind: 'skip', reason: 'in_flight' });
  });

  it('stops after passes that freed little, and heals a truncation only when nothing is in flight', () => {
    expect(decideAfterTurn(input({ usage: 0.9, ineffectivePasses: 3 }))).toMatchObject({
      kind: 'skip',
      reason: 'ineffective',
    });
    // The heal takes raw messages after the 10-token marker until it covers more than its summary.
    const cut = context([truncated(1, 40)], 41);
    const heal = { kind: 'enqueue', mode: 'heal', plan: { tier: 'emergency', fromSeq: 1, toSeq: 45 } };
    expect(decideAfterTurn(input({ context: cut, usage: 0.3 }))).toMatchObject(heal);
    expect(decideAfterTurn(input({ context: cut, usage: 0.3, inFlight: [running(1, 20)] }))).toEqual({
      kind: 'none',
    });
    // A channel whose passes stopped helping still gets its truncations healed.
    expect(decideAfterTurn(input({ context: cut, usage: 0.9, ineffectivePasses: 3 }))).toMatchObject(heal);
  });

  it('sizes a pass by what it frees: its fraction of the context plus the summary that replaces it', () => {
    const action = decideAfterTurn(input({ usage: 0.8, summaryTokens: 200 }));
    // 30% of 1,000 tokens freed, 200 more for the summary: 500 tokens covered, seqs 1..50.
    expect(action).toMatchObject({ kind: 'enqueue', plan: { fromSeq: 1, toSeq: 50, tokensCovered: 500 } });
    // A context whose unprotected messages hold no more than a summary gets no pass, which would grow it.
    const small = { ...context(), raw: context().raw.slice(0, 12), tokens: 120, headSeq: 12 };
    expect(decideAfterTurn(input({ context: small, usage: 0.8, summaryTokens: 70 }))).toMatchObject({
      kind: 'skip',
      reason: 'nothing_to_free',
    });
  });
});

describe('admitPass', () => {
  const pass = { tier: 'aggressive' as const, fromSeq: 1, toSeq: 50 };
  it('adds a disjoint pass while a slot is free, and no more than two', () => {
    expect(admitPass([], pass)).toEqual({ kind: 'add' });
    expect(admitPass([running(60, 80)], pass)).toEqual({ kind: 'add' });
    expect(admitPass([running(60, 80), running(81, 90)], pass)).toEqual({
      kind: 'deduplicated',
      jobId: 'p81',
    });
  });

  it('replaces a waiting pass of a lower tier over the same seqs, never a running or an equal one', () => {
    const waiting = { ...running(1, 30), running: false };
    expect(admitPass([waiting], pass)).toEqual({ kind: 'replace', jobId: 'p1' });
    expect(admitPass([running(1, 30)], pass)).toEqual({ kind: 'deduplicated', jobId: 'p1' });
    expect(admitPass([{ ...waiting, tier: 'aggressive' }], pass)).toEqual({
      kind: 'deduplicated',
      jobId: 'p1',
    });
  });
});

describe('CompactionMonitor', () => {
  const view = (generation: number): ContextView => ({ ...context(), generation });
  const turn = (usage: number, now: number, generation = 1) => ({
    context: view(generation),
    usage,
    usagePerToken: 0.001,
    summaryTokens: 50,
    now,
  });

  it('measures growth per second within one generation, and lets it fade when the channel goes quiet', () => {
    const monitor = new CompactionMonitor();
    for (let i = 0; i <= 200; i++) monitor.observe(turn(0.1 + i * 0.001, i * 100)); // 0.01 a second
    expect(monitor.pace(20_000).growthPerSecond).toBeCloseTo(0.01, 4);
    // A splice (new generation) is no growth sample, and a minute later the pace has faded.
    monitor.observe(turn(0.05, 20_100, 2));
    expect(monitor.pace(80_000).growthPerSecond).toBeLessThan(0.0011);
    // One big paste in a quiet channel (a message a minute) is a small share of a long span.
    const quiet = new CompactionMonitor();
    for (let i = 0; i < 64; i++) quiet.observe(turn(0.3 + i * 0.0001 + (i === 63 ? 0.1 : 0), i * 60_000));
    expect(quiet.pace(63 * 60_000).growthPerSecond * 10).toBeLessThan(0.001);
  });

  it('learns how long passes take (the slowest of the last five), and starts the cooldown only for passes that are not heals', () => {
    const monitor = new CompactionMonitor();
    expect(monitor.pace(0).passSeconds).toBe(10);
    monitor.landed({ tier: 'emergency', latencyMs: 2_000, at: 5_000 });
    expect(monitor.pace(0).passSeconds).toBe(2);
    const due = { ...turn(0.8, 6_000), inFlight: [] };
    expect(monitor.decide(policy, due).action).toMatchObject({ kind: 'enqueue', delayMs: 0 });
    monitor.landed({ tier: 'background', latencyMs: 4_000, at: 5_000 });
    expect(monitor.pace(0).passSeconds).toBe(4); // the slowest of the recent passes
    for (let i = 0; i < 5; i++) monitor.landed({ tier: 'aggressive', latencyMs: 1_000, at: 5_000 });
    expect(monitor.pace(0).passSeconds).toBe(1);
    expect(monitor.decide(policy, due).action).toMatchObject({ kind: 'enqueue', delayMs: 9_000 });
  });

  it('counts passes that freed little, and reports a repeated skip once', () => {
    const monitor = new CompactionMonitor();
    expect(monitor.shrunk(policy, 0.9, 0.82, 0)).toBe(false); // freed 0.08 < half of 30% of 0.9
    expect(monitor.shrunk(policy, 0.95, 0.805, 0)).toBe(true); // freed 0.145 under a burst: it helped
    // Judged on the conversation: with 0.4 of the usage reserved, 0.08 is more than half of 30% of 0.5.
    expect(monitor.shrunk(policy, 0.9, 0.82, 0.4)).toBe(true);
    for (let i = 0; i < 3; i++) monitor.shrunk(policy, 0.9, 0.88, 0);
    const skipped = { ...turn(0.9, 1), inFlight: [] };
    expect(monitor.decide(policy, skipped)).toMatchObject({
      action: { reason: 'ineffective' },
      report: true,
    });
    expect(monitor.decide(policy, skipped)).toMatchObject({ report: false });
  });
});
