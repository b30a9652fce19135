/**
 * Properties of the rewrites of raw copies (an edit, forgetting's tombstones, microcompaction's
 * stubs), over random channels (a compacted prefix, raw messages after it, some tool results, some
 * stubbed) and random requests (seqs in the prefix, raw, past the head, named twice). Planned on the
 * counters a store finds, the totals and generation a plan gives are those of the working context
 * after its copies are put in place: the Postgres store writes the plan's numbers, the in-memory
 * store keeps the context, and the two agree. Only raw seqs the archive holds get a copy; a stub
 * request is refused exactly when one of its seqs is not a raw tool result left to stub.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { countersOf } from '../model/channel-counters.js';
import type { ContextMessage, Role, Span, StoredMessage } from '../model/model.js';
import { WorkingContext } from '../model/working-context.js';
import {
  contextCopyOf,
  type FoundMessage,
  planArchiveRedaction,
  planMessageEdit,
  type RawRewrite,
} from './plan-message-rewrite.js';
import { planStubs } from './plan-microcompaction.js';

const channel = fc.integer({ min: 1, max: 16 }).chain((headSeq) =>
  fc.record({
    generation: fc.integer({ min: 0, max: 5 }),
    prefixEnd: fc.integer({ min: 0, max: headSeq }),
    messages: fc.array(
      fc.record({
        role: fc.constantFrom<Role>('user', 'assistant', 'tool'),
        tokens: fc.integer({ min: 1, max: 60 }),
        stubbed: fc.boolean(),
      }),
      { minLength: headSeq, maxLength: headSeq },
    ),
  }),
);
type Channel = typeof channel extends fc.Arbitrary<infer C> ? C : never;

/** The archive (every seq), and the working context over it. */
function build(c: Channel) {
  const archive: StoredMessage[] = c.messages.map((m, i) => ({
    seq: i + 1,
    role: m.role,
    author: m.role === 'user' ? 'ana' : 'ebb',
    text: `message ${i + 1}`,
    tokens: m.tokens,
  }));
  const spans: Span[] =
    c.prefixEnd === 0
      ? []
      : [{ kind: 'truncated', fromSeq: 1, toSeq: c.prefixEnd, tokens: 7, createdGeneration: 0 }];
  const raw: ContextMessage[] = archive.slice(c.prefixEnd).map((m, i) => ({
    ...m,
    ...(m.role === 'tool' && c.messages[c.prefixEnd + i]?.stubbed ? { stubbed: true } : {}),
  }));
  const context = new WorkingContext({ generation: c.generation, headSeq: archive.length, spans, raw });
  return { archive, context };
}

function at(archive: readonly StoredMessage[], seq: number): StoredMessage {
  const m = archive[seq - 1];
  if (m === undefined) throw new Error(`no archived seq ${seq}`);
  return m;
}

/**
 * What a store finds at `seqs`: every archived one, as Postgres reads rows (prefix ones too), its
 * copy's tokens those of the raw copy. A prefix message's tokens are made up: no plan may read them.
 */
function foundAt(c: Channel, seqs: readonly number[]): (FoundMessage & { role: Role; stubbed: boolean })[] {
  return [...new Set(seqs)].flatMap((seq) => {
    const m = c.messages[seq - 1];
    if (m === undefined || seq < 1) return [];
    const stubbed = m.role === 'tool' && m.stubbed;
    return [{ seq, role: m.role, stubbed, tokens: seq > c.prefixEnd ? m.tokens : 100_000 }];
  });
}

/** The plan's numbers are the context's once the plan's raw copies are in place. */
function expectApplied(c: Channel, plan: RawRewrite, copyOf: (seq: number) => StoredMessage): void {
  const { context } = build(c);
  const before = context.tokens;
  context.replaceRaw(plan.copies.map(({ seq, copy }) => contextCopyOf(copyOf(seq), copy)));
  expect(plan.tokensBefore).toBe(before);
  expect(plan.tokensAfter).toBe(context.tokens);
  expect(plan.generation).toBe(context.generation);
  expect(plan.rawTokens).toBe(countersOf(context.view()).rawTokens);
  for (const { seq } of plan.copies) expect(seq).toBeGreaterThan(c.prefixEnd);
  expect(new Set(plan.copies.map((r) => r.seq)).size).toBe(plan.copies.length);
}

const seqs = fc.array(fc.integer({ min: 0, max: 19 }), { maxLength: 8 });

describe('planArchiveRedaction', () => {
  test.prop([channel, seqs, fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 8, maxLength: 8 })], {
    numRuns: 300,
  })('tombstones each held seq once, and its totals are the context’s after', (c, named, sizes) => {
    const { archive, context } = build(c);
    const tombstones = named.map((seq, i) => ({
      seq,
      role: 'user' as const,
      author: 'ana',
      text: '[message redacted]',
      tokens: sizes[i] ?? 1,
    }));
    const plan = planArchiveRedaction(countersOf(context.view()), foundAt(c, named), tombstones);
    const held = [...new Set(named)].filter((seq) => seq >= 1 && seq <= archive.length).sort((a, b) => a - b);
    expect(plan.tombstones.map((t) => t.tombstone.seq)).toEqual(held);
    for (const { tombstone } of plan.tombstones) {
      expect(tombstone).toBe(tombstones.findLast((t) => t.seq === tombstone.seq));
    }
    expect(plan.copies.map((r) => r.seq)).toEqual(held.filter((seq) => seq > c.prefixEnd));
    const written = new Map(plan.tombstones.map((t) => [t.tombstone.seq, t.tombstone]));
    expectApplied(c, plan, (seq) => written.get(seq) ?? at(archive, seq));
  });
});

describe('planMessageEdit', () => {
  test.prop([channel, fc.integer({ min: 0, max: 19 }), fc.integer({ min: 1, max: 80 })], { numRuns: 300 })(
    'edits a held seq, its copy only when raw, and its totals are the context’s after',
    (c, seq, contextTokens) => {
      const { archive, context } = build(c);
      const edit = { seq, text: 'edited', tokens: contextTokens + 5, contextTokens };
      const plan = planMessageEdit(countersOf(context.view()), foundAt(c, [seq])[0], edit);
      if (seq < 1 || seq > archive.length) {
        expect(plan).toEqual({ kind: 'missing' });
        return;
      }
      if (plan.kind === 'missing') throw new Error(`seq ${seq} is archived`);
      expect(plan.raw).toBe(seq > c.prefixEnd);
      const edited = { ...at(archive, seq), text: edit.text, tokens: edit.tokens };
      expectApplied(c, { ...plan, copies: plan.raw ? [{ seq, copy: plan.copy }] : [] }, () => edited);
    },
  );
});

describe('planStubs', () => {
  const request = fc.record({
    sameGeneration: fc.boolean(),
    stubs: fc.array(
      fc.record({
        seq: fc.integer({ min: 0, max: 19 }),
        tokens: fc.integer({ min: 1, max: 20 }),
        marked: fc.boolean(),
      }),
      { maxLength: 4 },
    ),
  });

  test.prop([channel, request], { numRuns: 500 })(
    'refuses exactly a request naming anything but raw tool results left to stub, once each',
    (c, r) => {
      const { archive, context } = build(c);
      const stubs = r.stubs.map((s) => ({
        seq: s.seq,
        text: `[stub of #${s.seq}]`,
        tokens: s.tokens,
        ...(s.marked ? { stubbed: true as const } : {}),
      }));
      const expectedGeneration = r.sameGeneration ? c.generation : c.generation + 1;
      const found = foundAt(
        c,
        stubs.map((s) => s.seq),
      );
      const plan = planStubs(countersOf(context.view()), found, { expectedGeneration, stubs });
      const seqs = stubs.map((s) => s.seq);
      const stubbable = (s: (typeof stubs)[number]) => {
        const m = c.messages[s.seq - 1];
        return s.seq > c.prefixEnd && m?.role === 'tool' && !m.stubbed && s.stubbed === true;
      };
      const admitted =
        r.sameGeneration && new Set(seqs).size === seqs.length && stubs.every((s) => stubbable(s));
      expect(plan.kind).toBe(admitted ? 'stub' : 'stale');
      if (plan.kind === 'stale') return;
      expect(plan.copies.map((s) => s.seq)).toEqual([...seqs].sort((a, b) => a - b));
      expect(plan.tokensSaved).toBe(plan.tokensBefore - plan.tokensAfter);
      expectApplied(c, plan, (seq) => at(archive, seq));
    },
  );
});
