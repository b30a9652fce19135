import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { contextProblems } from '../../test/check-context.js';
import { testPolicy } from '../../test/policy.js';
import { earlyStartFloor, MAX_PASSES_IN_FLIGHT } from '../decision/decide-after-turn.js';
import { SILENCE_PASS_SHARE } from '../decision/decide-on-silence.js';
import { Simulation } from './simulation.js';
import type {
  CompactionEvent,
  SimulationEvent,
  SimulationOptions,
  TranscriptMessage,
} from './simulation-events.js';

const policy = testPolicy({
  protectRecent: 4,
  summaryMaxTokens: 120,
  cooldownMs: 0,
  messageMaxTokens: 1_000,
});

function transcript(): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (let i = 0; i < 600; i++) {
    // Steady chatter, a burst of mid-sized pastes (past aggressive while a job runs) and two huge ones.
    const size = i === 300 || i === 450 ? 3_600 : i % 97 === 50 ? 900 : 60 + (i % 7) * 10;
    out.push({
      role: i % 5 === 4 ? 'assistant' : 'user',
      author: `p${i % 4}`,
      text: `${i} ${'w'.repeat(size)}`,
    });
  }
  return out;
}

/** A 4,000-token window's simulation that records its events into `events`. */
function simulation(events: SimulationEvent[], options: Partial<SimulationOptions> = {}): Simulation {
  return new Simulation({
    policy,
    contextWindow: 4_000,
    maxOutputTokens: 400,
    reservedTokens: 100,
    tokenizer: new CharTokenizer(),
    jobLatency: 1,
    emit: (e) => events.push(e),
    ...options,
  });
}

function simulate(messages: readonly TranscriptMessage[], jobLatency: number): SimulationEvent[] {
  const events: SimulationEvent[] = [];
  const sim = simulation(events, { jobLatency });
  for (const m of messages) sim.turn(m);
  sim.finish();
  return events;
}

describe('Simulation on a clock that jumps back', () => {
  it('counts the jump as no time passing, so the pace and the cooldown see the traffic as it came', () => {
    // One message every 30 s from 11:00; after the 120th, a 12-hour clock reads noon as 00:00.
    const HOUR = 3_600_000;
    const at = (i: number, wrapped: boolean) => {
      const t = Date.UTC(2004, 11, 25, 11) + 30_000 * i - (i > 120 ? 30_000 + (wrapped ? 12 * HOUR : 0) : 0);
      return new Date(t).toISOString();
    };
    const messages = (wrapped: boolean) =>
      transcript()
        .slice(0, 400)
        .map((m, i) => ({ ...m, ts: at(i, wrapped) }));
    const run = (wrapped: boolean) => {
      const events: SimulationEvent[] = [];
      const sim = new Simulation({
        policy: { ...policy, cooldownMs: 120_000 },
        contextWindow: 4_000,
        maxOutputTokens: 400,
        reservedTokens: 100,
        tokenizer: new CharTokenizer(),
        jobLatency: 2,
        jobSeconds: 90,
        emit: (e) => events.push(e),
      });
      for (const m of messages(wrapped)) sim.turn(m);
      sim.finish();
      return events;
    };
    const wrapped = run(true);
    // The same traffic with the jump taken out (the two messages at it 0 s apart): the same passes.
    expect(wrapped).toEqual(run(false));
    const after = wrapped.filter((e) => e.type === 'compaction' && e.event === 'completed' && e.seq > 130);
    expect(after.length).toBeGreaterThan(2);
  });
});

describe('Simulation across a silence longer than the cache lifetime', () => {
  /** 41 messages a minute apart, the last after a pause: about 0.7 of a 3,600-token budget, a pause, one more. */
  const channel = (pauseMs: number): TranscriptMessage[] => {
    const start = Date.UTC(2026, 11, 1, 9);
    const ts = (i: number) => new Date(start + 60_000 * i + (i === 40 ? pauseMs : 0)).toISOString();
    return Array.from({ length: 41 }, (_, i) => ({
      role: 'user' as const,
      author: `p${i % 3}`,
      text: `${i} ${'w'.repeat(205)}`,
      ts: ts(i),
    }));
  };
  const replay = (pauseMs: number) => {
    const events: SimulationEvent[] = [];
    const sim = simulation(events, { jobSeconds: 30, cacheTtlSeconds: 300 });
    for (const m of channel(pauseMs)) sim.turn(m);
    const summary = sim.finish();
    const last = events.filter((e) => e.type === 'message').at(-1);
    return { summary, events, lastUsage: last?.type === 'message' ? last.usage : Number.NaN };
  };

  it('compacts a channel due soon while its cache is cold, so the next reply pays a smaller prompt', () => {
    const warm = replay(60_000); // a minute's pause: nothing changes
    const cold = replay(3_600_000); // an hour's: the cache let the prompt go after five minutes
    expect(warm.summary.coldPasses).toBe(0);
    expect(warm.summary.tiers.background).toBe(0);
    expect(warm.lastUsage).toBeGreaterThan(SILENCE_PASS_SHARE * policy.backgroundThreshold);
    expect(cold.summary.coldPasses).toBe(1);
    expect(cold.events).toContainEqual(
      expect.objectContaining({
        type: 'compaction',
        event: 'triggered',
        tier: 'background',
        reason: 'cache_cold',
      }),
    );
    // The pass landed in the silence, before the message that ended it.
    const completed = cold.events.findIndex((e) => e.type === 'compaction' && e.event === 'completed');
    const lastMessage = cold.events.findLastIndex((e) => e.type === 'message');
    expect(completed).toBeGreaterThan(-1);
    expect(completed).toBeLessThan(lastMessage);
    expect(cold.lastUsage).toBeLessThan(warm.lastUsage - 0.2);
    // That reply found the cache cold either way: the pass cost it nothing.
    expect(cold.summary.promptCache.coldPrompts).toBe(warm.summary.promptCache.coldPrompts + 1);
  });
});

describe('Simulation with retainArchive: unsummarized', () => {
  it('decides exactly as with the whole archive, and keeps only what no summary covers', () => {
    // Tool turns too, so stubs of microcompacted results are read by passes and then dropped.
    const messages = transcript().flatMap((m, i): TranscriptMessage[] =>
      i % 11 === 3
        ? [
            {
              role: 'assistant',
              author: 'ebb',
              text: '',
              toolCalls: [{ id: `c${i}`, name: 'ci.log', arguments: '{}' }],
            },
            { role: 'tool', author: 'ci.log', text: `log ${i} ${'z'.repeat(400)}`, toolCallId: `c${i}` },
            m,
          ]
        : [m],
    );
    const run = (retainArchive: 'all' | 'unsummarized') => {
      const events: SimulationEvent[] = [];
      const sim = new Simulation({
        policy: { ...policy, microcompactThreshold: 0.5, microcompactMinTokens: 100 },
        contextWindow: 4_000,
        maxOutputTokens: 400,
        reservedTokens: 100,
        tokenizer: new CharTokenizer(),
        jobLatency: 2,
        retainArchive,
        emit: (e) => events.push(e),
      });
      for (const m of messages) sim.turn(m);
      const kept = sim.archive().length;
      sim.finish();
      return { events, kept };
    };
    const all = run('all');
    const bounded = run('unsummarized');
    expect(bounded.events).toEqual(all.events);
    expect(all.events.some((e) => e.type === 'compaction' && e.event === 'microcompacted')).toBe(true);
    expect(all.kept).toBe(messages.length);
    expect(bounded.kept).toBeLessThan(messages.length / 10);
  });
});

describe('Simulation', () => {
  const events = simulate(transcript(), 2);
  const compaction = events.filter((e): e is CompactionEvent => e.type === 'compaction');
  const summary = events.at(-1);

  it('runs background, aggressive and emergency passes at their thresholds', () => {
    const started = (tier: string) => compaction.filter((e) => e.event === 'started' && e.tier === tier);
    expect(started('background').length).toBeGreaterThan(0);
    expect(started('aggressive').length).toBeGreaterThan(0);
    expect(compaction.filter((e) => e.event === 'emergency').length).toBeGreaterThan(0);
    for (const e of compaction.filter((c) => c.event === 'triggered')) expectDue(e, policy);
  });

  it('archives every message once and keeps usage under 1 after the monitor acts', () => {
    expect(summary).toMatchObject({ type: 'summary', messages: 600, archived: 600 });
    const messages = events.filter((e) => e.type === 'message');
    expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
    expect(Math.max(...messages.map((m) => m.usage))).toBeLessThan(1);
  });

  it('heals every emergency truncation with a summary', () => {
    const heals = compaction.filter((e) => e.event === 'completed' && e.tier === 'emergency');
    expect(heals.length).toBeGreaterThan(0);
    expect(summary?.type === 'summary' && summary.heals).toBeGreaterThan(0);
  });

  it('completed passes shrink the context, heals too (a heal takes raw messages besides the marker)', () => {
    const completed = compaction.filter((c) => c.event === 'completed');
    expect(completed.some((e) => e.tier === 'emergency')).toBe(true);
    for (const e of completed) expect(e.tokensAfter).toBeLessThan(e.tokensBefore ?? 0);
  });

  it('is deterministic, and a zero job latency applies passes in the same turn', () => {
    expect(simulate(transcript(), 2)).toEqual(events);
    const instant = simulate(transcript(), 0).filter((e): e is CompactionEvent => e.type === 'compaction');
    for (const started of instant.filter((e) => e.event === 'started')) {
      const done = instant.find(
        (e) => e.jobId === started.jobId && (e.event === 'completed' || e.event === 'stale'),
      );
      expect(done?.seq).toBe(started.seq);
    }
  });
});

describe('Simulation under random traffic and settings', () => {
  const settings = fc
    .record({
      background: fc.double({ min: 0.3, max: 0.8, noNaN: true }),
      gap1: fc.double({ min: 0.01, max: 0.1, noNaN: true }),
      gap2: fc.double({ min: 0.01, max: 0.1, noNaN: true }),
      backgroundFraction: fc.double({ min: 0.1, max: 0.6, noNaN: true }),
      aggressiveFraction: fc.double({ min: 0.3, max: 0.9, noNaN: true }),
      protectRecent: fc.integer({ min: 0, max: 8 }),
      jobLatency: fc.integer({ min: 0, max: 6 }),
    })
    .map((s) => ({
      policy: testPolicy({
        backgroundThreshold: s.background,
        aggressiveThreshold: s.background + s.gap1,
        emergencyThreshold: Math.min(1, s.background + s.gap1 + s.gap2),
        backgroundFraction: s.backgroundFraction,
        aggressiveFraction: s.aggressiveFraction,
        protectRecent: s.protectRecent,
        summaryMaxTokens: 80,
        cooldownMs: 0,
        messageMaxTokens: 600,
      }),
      jobLatency: s.jobLatency,
    }));
  const traffic = fc.array(fc.integer({ min: 1, max: 3_000 }), { minLength: 50, maxLength: 400 });

  test.prop([settings, traffic], { numRuns: 60 })(
    'every turn keeps the invariants, and every completed pass is effective or counted as not',
    ({ policy, jobLatency }, sizes) => {
      const events: SimulationEvent[] = [];
      const sim = new Simulation({
        policy,
        contextWindow: 3_000,
        maxOutputTokens: 300,
        reservedTokens: 50,
        tokenizer: new CharTokenizer(),
        jobLatency,
        emit: (e) => events.push(e),
      });
      for (const [i, size] of sizes.entries()) {
        sim.turn({ role: 'user', author: `p${i % 3}`, text: 'x'.repeat(size) });
        expect(contextProblems(sim.view(), sim.archive())).toEqual([]);
      }
      const summary = sim.finish();
      expect(summary.archived).toBe(sizes.length);
      for (const e of events) if (e.type === 'compaction' && e.event === 'triggered') expectDue(e, policy);
      // Never more than two passes in flight, and never two over one seq.
      const open = new Map<string, CompactionEvent>();
      for (const e of events) {
        if (e.type !== 'compaction' || e.jobId === undefined) continue;
        if (e.event === 'enqueued') {
          if (e.reason?.startsWith('escalated ')) open.delete(e.reason.slice('escalated '.length));
          for (const other of open.values())
            expect(other.toSeq !== null && e.fromSeq !== null && other.toSeq < e.fromSeq).toBe(true);
          open.set(e.jobId, e);
          expect(open.size).toBeLessThanOrEqual(MAX_PASSES_IN_FLIGHT);
        }
        if (e.event === 'completed' || e.event === 'stale') open.delete(e.jobId);
      }
    },
  );
});

/** A pass triggers only when due: past the background threshold, or early when the pace says it would land too late. */
function expectDue(e: CompactionEvent, p: typeof policy): void {
  const projected = e.projectedUsage ?? e.usage;
  if (e.tier === 'emergency') {
    expect(e.usage + 1e-4).toBeGreaterThanOrEqual(p.emergencyThreshold);
    return;
  }
  // Event figures are rounded to 4 decimals.
  const slack = 1e-4;
  const early =
    e.usage + slack >= earlyStartFloor(p) &&
    projected + slack >= p.backgroundThreshold &&
    projected - e.usage + slack >= (p.emergencyThreshold - p.backgroundThreshold) / 2;
  expect(e.usage + slack >= p.backgroundThreshold || early).toBe(true);
  if (e.tier === 'aggressive')
    expect(Math.max(e.usage, projected) + slack).toBeGreaterThanOrEqual(p.aggressiveThreshold);
}

describe('Simulation of a tool-heavy burst', () => {
  it('stubs old tool results before the pace starts a pass early, and starts none while stubs keep it under', () => {
    // 17 tool results of about 2,800 tokens, a tool turn every 2 s of the transcript's clock, into a 32k
    // window: the pace reaches the early-start floor at about usage 0.5, while stubbing the results
    // older than the newest three (from 0.6, free and losing nothing) keeps the channel far below
    // the background threshold. Passes take a minute.
    const messages: TranscriptMessage[] = [];
    const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 9, 0, s)).toISOString();
    for (let i = 0; i < 17; i++) {
      const id = `c${i}`;
      messages.push(
        { role: 'user', author: 'dev', text: `run the suite, try ${i}`, ts: at(i * 2) },
        {
          role: 'assistant',
          author: 'ebb',
          text: '',
          toolCalls: [{ id, name: 'ci.log', arguments: '{}' }],
          ts: at(i * 2),
        },
        {
          role: 'tool',
          author: 'ci.log',
          text: `log ${i}\n${'z'.repeat(11_200)}`,
          toolCallId: id,
          ts: at(i * 2 + 1),
        },
        { role: 'assistant', author: 'ebb', text: `try ${i} failed at step ${i}`, ts: at(i * 2 + 1) },
      );
    }
    const events: SimulationEvent[] = [];
    const sim = simulation(events, {
      policy: testPolicy({ protectRecent: 4, summaryMaxTokens: 400 }),
      contextWindow: 32_000,
      maxOutputTokens: 1_000,
      jobLatency: 0,
      jobSeconds: 60,
    });
    for (const m of messages) sim.turn(m);
    sim.finish();
    const compactions = events.filter((e): e is CompactionEvent => e.type === 'compaction');
    const stubbedAt = compactions.findIndex((e) => e.event === 'microcompacted');
    const passes = compactions.filter((e) => e.event === 'triggered');
    expect(stubbedAt).toBeGreaterThanOrEqual(0);
    expect(passes.filter((e) => compactions.indexOf(e) < stubbedAt)).toEqual([]);
    expect(passes).toEqual([]);
    expect(compactions.filter((e) => e.tier === 'emergency')).toEqual([]);
  });
});
