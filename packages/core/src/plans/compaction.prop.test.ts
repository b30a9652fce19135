/**
 * Properties of the compaction core over random interleavings of appends, plans, follow-up plans
 * over the next disjoint range, job starts and finishes in any order (so passes over disjoint ranges
 * live at the same time and land in either order), emergency truncations, heals, microcompaction
 * (stubs for old tool results), and duplicated (retried) results. Summaries come back at any size,
 * also larger than the budget their pass was planned with.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { contextProblems } from '../../test/check-context.js';
import type { ArchivedMessage, ContextMessage, Tier } from '../model/model.js';
import { WorkingContext } from '../model/working-context.js';
import { type CompactionPlan, planCompaction, planHeal, tokensInRange } from './plan-compaction.js';
import { planEmergencyTruncation } from './plan-emergency-truncation.js';
import { planMicrocompaction, stubToolResults } from './plan-microcompaction.js';
import { planSplice, rawTokensThrough, type SummaryResult } from './plan-splice.js';

const op = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      tokens: fc.integer({ min: 1, max: 400 }),
      tools: fc.integer({ min: 0, max: 2 }),
      resultTokens: fc.integer({ min: 7, max: 600 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('plan' as const),
      tier: fc.constantFrom<Tier>('background', 'aggressive'),
      fraction: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
      summaryTokens: fc.integer({ min: 0, max: 150 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('follow' as const),
      job: fc.nat(),
      fraction: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
      summaryTokens: fc.integer({ min: 0, max: 150 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('start' as const), job: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('finish' as const),
      job: fc.nat(),
      summaryTokens: fc.integer({ min: 5, max: 120 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('retry' as const), job: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('emergency' as const),
      fraction: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('heal' as const),
      summaryTokens: fc.integer({ min: 0, max: 150 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('microcompact' as const),
      keep: fc.integer({ min: 0, max: 4 }),
      minTokens: fc.integer({ min: 1, max: 300 }),
    }),
  },
);

interface Job {
  readonly id: string;
  readonly plan: CompactionPlan;
  /** Seqs whose information the summary was built from (folded summaries pass theirs on). */
  sources?: Set<number>;
  snapshotGeneration?: number;
  result?: SummaryResult;
  /** Its summary was spliced (a result that met a gap was not, and may splice on a retry). */
  applied?: boolean;
}

type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** The random interleavings the property runs, and the guard below samples on its own. */
const interleavings = fc.tuple(
  fc.array(op, { minLength: 20, maxLength: 150, size: 'max' }),
  fc.integer({ min: 0, max: 6 }),
);

/** How often each outcome of a result, and a truncation, came up in the replays that share it. */
type Outcomes = {
  splice: number;
  stale: number;
  noop: number;
  gap: number;
  truncate: number;
  followUpSplice: number;
  microcompact: number;
  /** Results refused because they would have made the context bigger. */
  wouldGrow: number;
};
const noOutcomes = (): Outcomes => ({
  splice: 0,
  stale: 0,
  noop: 0,
  gap: 0,
  truncate: 0,
  followUpSplice: 0,
  microcompact: 0,
  wouldGrow: 0,
});
const tokenizer = new CharTokenizer();

function replay(ops: Op[], protectRecent: number, seen: Outcomes = noOutcomes()): Outcomes {
  const ctx = new WorkingContext();
  const archive: ArchivedMessage[] = [];
  const jobs: Job[] = [];
  /** Sources of every summary span ever created, by job id. */
  const spanSources = new Map<string, Set<number>>();
  let calls = 0;

  const append = (m: Omit<ContextMessage, 'seq'>) => {
    const full = { ...m, seq: ctx.headSeq + 1 } as ContextMessage;
    archive.push(full);
    ctx.append(full);
  };
  const snapshotOf = () => JSON.stringify(ctx.view());

  for (const o of ops) {
    switch (o.kind) {
      case 'append': {
        if (o.tools === 0) {
          append({ role: 'user', author: 'ana', text: 'hi', tokens: o.tokens });
          break;
        }
        const ids = Array.from({ length: o.tools }, () => `call-${++calls}`);
        append({
          role: 'assistant',
          author: 'ebb',
          text: '',
          tokens: o.tokens,
          toolCalls: ids.map((id) => ({ id, name: 'f', arguments: '{}' })),
        });
        for (const id of ids)
          append({ role: 'tool', author: 'f', text: 'ok', tokens: o.resultTokens, toolCallId: id });
        break;
      }
      case 'plan': {
        const result = planCompaction({
          context: ctx.view(),
          tier: o.tier,
          fraction: o.fraction,
          protectRecent,
          summaryTokens: o.summaryTokens,
        });
        if (result.kind === 'plan') {
          // It covers more than the summary that will replace it.
          expect(result.plan.tokensCovered).toBeGreaterThan(o.summaryTokens);
          // Never reaches into the newest protected messages (a heal-only plan stops at the prefix).
          const limit = Math.max(ctx.view().spans.at(-1)?.toSeq ?? 0, ctx.headSeq - protectRecent);
          expect(result.plan.toSeq).toBeLessThanOrEqual(limit);
          jobs.push({ id: `job-${jobs.length}`, plan: result.plan });
        }
        break;
      }
      case 'follow': {
        // A follow-up over the next disjoint range after a pass still waiting or running.
        const open = jobs.filter((j) => !j.applied);
        const previous = open[o.job % Math.max(1, open.length)];
        if (!previous) break;
        const result = planCompaction({
          context: ctx.view(),
          tier: 'aggressive',
          fraction: o.fraction,
          protectRecent,
          summaryTokens: o.summaryTokens,
          after: previous.plan.toSeq,
        });
        if (result.kind === 'plan') {
          expect(result.plan.tokensCovered).toBeGreaterThan(o.summaryTokens);
          expect(result.plan.fromSeq).toBe(previous.plan.toSeq + 1);
          expect(result.plan.toSeq).toBeLessThanOrEqual(
            Math.max(ctx.view().spans.at(-1)?.toSeq ?? 0, ctx.headSeq - protectRecent),
          );
          jobs.push({ id: `job-${jobs.length}`, plan: result.plan });
        }
        break;
      }
      case 'heal': {
        const plan = planHeal(ctx.view(), { protectRecent, summaryTokens: o.summaryTokens });
        if (plan) {
          // It covers every truncation of the prefix, and more than its summary.
          const truncations = ctx.view().spans.filter((s) => s.kind === 'truncated');
          expect(plan.toSeq).toBeGreaterThanOrEqual(truncations.at(-1)?.toSeq ?? 0);
          expect(plan.tokensCovered).toBeGreaterThan(o.summaryTokens);
          jobs.push({ id: `job-${jobs.length}`, plan });
        }
        break;
      }
      case 'start': {
        const job = jobs.filter((j) => !j.sources)[o.job % Math.max(1, jobs.length)];
        if (!job) break;
        // The worker folds summary spans inside the range and reads everything else from the archive.
        const sources = new Set<number>();
        for (const s of ctx.view().spans) {
          if (s.kind === 'summary' && s.fromSeq >= job.plan.fromSeq && s.toSeq <= job.plan.toSeq) {
            for (const seq of spanSources.get(s.jobId) ?? []) sources.add(seq);
          }
        }
        for (let seq = job.plan.fromSeq; seq <= job.plan.toSeq; seq++) {
          const inFolded = ctx
            .view()
            .spans.some(
              (s) =>
                s.kind === 'summary' &&
                s.fromSeq >= job.plan.fromSeq &&
                s.toSeq <= job.plan.toSeq &&
                s.fromSeq <= seq &&
                seq <= s.toSeq,
            );
          if (!inFolded) sources.add(seq);
        }
        job.sources = sources;
        job.snapshotGeneration = ctx.generation;
        break;
      }
      case 'finish':
      case 'retry': {
        const candidates =
          o.kind === 'finish' ? jobs.filter((j) => j.sources && !j.result) : jobs.filter((j) => j.result);
        const job = candidates[o.job % Math.max(1, candidates.length)];
        if (!job?.sources || job.snapshotGeneration === undefined) break;
        const result: SummaryResult = job.result ?? {
          jobId: job.id,
          fromSeq: job.plan.fromSeq,
          toSeq: job.plan.toSeq,
          text: `summary of ${job.plan.fromSeq}..${job.plan.toSeq}`,
          tokens: o.kind === 'finish' ? o.summaryTokens : 10,
        };
        job.result = result;
        spanSources.set(job.id, job.sources);
        const before = snapshotOf();
        const plan = planSplice(ctx.view(), result, rawTokensThrough(ctx.view().raw, result.toSeq));
        seen[plan.kind]++;
        if (plan.kind === 'stale' && plan.reason.includes('larger than')) seen.wouldGrow++;
        if (plan.kind !== 'splice') {
          expect(snapshotOf()).toBe(before);
          // A gap means a pass ahead of this one's range has not landed: only a follow-up meets one.
          if (plan.kind === 'gap')
            expect(job.plan.fromSeq).toBeGreaterThan((ctx.view().spans.at(-1)?.toSeq ?? 0) + 1);
          break;
        }
        // A result is spliced once: applying it again changes nothing.
        expect(job.applied).toBeUndefined();
        const outcome = ctx.applySplice(plan);
        // A completed pass never makes the context bigger, whatever ran meanwhile.
        expect(outcome.tokensAfter).toBeLessThanOrEqual(outcome.tokensBefore);
        job.applied = true;
        if (job.plan.fromSeq > 1) seen.followUpSplice++;
        const again = planSplice(ctx.view(), result, rawTokensThrough(ctx.view().raw, result.toSeq));
        expect(again.kind).not.toBe('splice');
        break;
      }
      case 'microcompact': {
        const policy = {
          microcompaction: true,
          microcompactThreshold: 0.6,
          backgroundThreshold: 0.8,
          emergencyThreshold: 1.1,
          keepToolResults: o.keep,
          microcompactMinTokens: o.minTokens,
        };
        const seqs = planMicrocompaction(ctx.view(), 1, policy);
        // The context's index of tool results, kept through every change, agrees with a scan.
        expect(planMicrocompaction({ raw: ctx.view().raw }, 1, policy)).toEqual(seqs);
        expect(ctx.view().toolResultSeqs).toEqual(
          ctx
            .view()
            .raw.filter((m) => m.role === 'tool')
            .map((m) => m.seq),
        );
        if (seqs.length === 0) break;
        const raw = ctx.view().raw;
        const results = raw.filter((m) => m.role === 'tool');
        // The newest `keep` results are never stubbed, and neither is a result under the minimum.
        for (const m of results.slice(Math.max(0, results.length - o.keep)))
          expect(seqs).not.toContain(m.seq);
        const stubs = stubToolResults(raw, seqs, tokenizer);
        expect(stubs.map((m) => m.seq)).toEqual(seqs);
        for (const stub of stubs) {
          const was = raw.find((m) => m.seq === stub.seq);
          expect(was?.tokens).toBeGreaterThanOrEqual(o.minTokens);
          expect(stub).toMatchObject({ role: 'tool', toolCallId: was?.toolCallId, stubbed: true });
          expect(stub.text).toContain(`archived as #${stub.seq}`);
        }
        const before = ctx.generation;
        ctx.replaceRaw(stubs);
        seen.microcompact++;
        expect(ctx.generation).toBe(before + 1);
        // Stubbing is stable: the same context plans nothing more.
        expect(planMicrocompaction(ctx.view(), 1, policy)).toEqual([]);
        break;
      }
      case 'emergency': {
        const before = ctx.tokens;
        const plan = planEmergencyTruncation({
          context: ctx.view(),
          fraction: o.fraction,
          protectRecent,
          markerTokens: 10,
        });
        if (plan.kind === 'nothing') break;
        expect(plan.toSeq).toBeLessThanOrEqual(ctx.headSeq - protectRecent);
        seen.truncate++;
        const outcome = ctx.applyTruncation(plan);
        expect(outcome.tokensBefore).toBe(before);
        break;
      }
    }

    expect(contextProblems(ctx.view(), archive)).toEqual([]);
    // Every summary in the context was built from every message it stands for: nothing is lost.
    for (const s of ctx.view().spans) {
      if (s.kind !== 'summary') continue;
      // A summary covers exactly the range its job was planned over: spans are never relabelled.
      const job = jobs.find((j) => j.id === s.jobId);
      expect([s.fromSeq, s.toSeq]).toEqual([job?.plan.fromSeq, job?.plan.toSeq]);
      const sources = spanSources.get(s.jobId);
      for (let seq = s.fromSeq; seq <= s.toSeq; seq++) expect(sources?.has(seq)).toBe(true);
    }
  }
  return seen;
}

describe('compaction core under random interleavings', () => {
  test.prop([interleavings], { numRuns: 250 })(
    'keeps every message exactly once, spans tiling the prefix, tool pairs together, retries idempotent, and no completed pass grows the context',
    ([ops, protectRecent]) => {
      replay(ops, protectRecent);
    },
  );

  test('the interleavings above do reach every outcome', () => {
    // Guards the generator: a property that never sees a stale result or a truncation proves little.
    // It replays its own sample (as many runs as the property, a fixed seed), so it passes or fails
    // the same alone, in any order, and whatever seed the property drew.
    const seen = noOutcomes();
    for (const [ops, protectRecent] of fc.sample(interleavings, { numRuns: 250, seed: 1 }))
      replay(ops, protectRecent, seen);
    expect(seen.splice).toBeGreaterThan(100);
    expect(seen.stale).toBeGreaterThan(10);
    expect(seen.noop).toBeGreaterThan(10);
    expect(seen.truncate).toBeGreaterThan(100);
    expect(seen.gap).toBeGreaterThan(10);
    expect(seen.followUpSplice).toBeGreaterThan(10);
    expect(seen.microcompact).toBeGreaterThan(50);
    expect(seen.wouldGrow).toBeGreaterThan(10);
  });

  test.prop([
    fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 200 }),
    fc.double({ min: 0.05, max: 0.95, noNaN: true }),
    fc.integer({ min: 0, max: 400 }),
    fc.integer({ min: 0, max: 400 }),
    fc.integer({ min: 0, max: 20 }),
  ])(
    'a pass applied without interleaving frees its fraction (or all it may take) and never grows the context',
    (sizes, fraction, bound, summaryTokens, protectRecent) => {
      const ctx = new WorkingContext();
      for (const tokens of sizes)
        ctx.append({ seq: ctx.headSeq + 1, role: 'user', author: 'a', text: '', tokens });
      const result = planCompaction({
        context: ctx.view(),
        tier: 'background',
        fraction,
        protectRecent,
        summaryTokens: bound,
      });
      const before = ctx.tokens;
      const mayTake = tokensInRange(ctx.view(), 1, ctx.headSeq - protectRecent);
      if (result.kind !== 'plan') {
        // Only when what a pass may take holds no more than its summary.
        expect(mayTake).toBeLessThanOrEqual(bound);
        return;
      }
      const { plan } = result;
      const summary = Math.min(summaryTokens, bound);
      const view = ctx.view();
      const splice = planSplice(
        view,
        { jobId: 'j', fromSeq: plan.fromSeq, toSeq: plan.toSeq, text: 's', tokens: summary },
        rawTokensThrough(view.raw, plan.toSeq),
      );
      if (splice.kind !== 'splice') throw new Error(`expected a splice, got ${splice.kind}`);
      const outcome = ctx.applySplice(splice);
      expect(outcome.tokensAfter).toBe(before - plan.tokensCovered + summary);
      expect(outcome.tokensAfter).toBeLessThan(before);
      // It frees at least the fraction asked for, whatever the summary (or takes all it may).
      expect(before - outcome.tokensAfter >= fraction * before || plan.tokensCovered === mayTake).toBe(true);
    },
  );

  test.prop([fc.string({ maxLength: 4000 }), fc.integer({ min: 30, max: 400 })])(
    'a clipped message fits its cap and says how much was left out',
    async (text, cap) => {
      const { measureMessage } = await import('../model/measure-message.js');
      const tokenizer = new CharTokenizer();
      const m = measureMessage({ seq: 1, role: 'user', author: 'ana', text }, tokenizer, cap).entry;
      expect(m.tokens).toBeLessThanOrEqual(
        Math.max(
          cap,
          4 +
            tokenizer.count('ana: ') +
            tokenizer.count(
              `\n[… ${tokenizer.encode(text).length} tokens of this message left out here; the archive keeps it whole …]\n`,
            ) +
            2,
        ),
      );
      if (m.omittedTokens !== undefined)
        expect(m.text).toContain(`${m.omittedTokens} tokens of this message left out`);
      else expect(m.text).toBe(text);
    },
  );
});
