/**
 * Properties of what a deletion removes, over random channels (people's messages, the bot's turns
 * with tool steps, a compacted prefix of summaries and truncation markers) and random deletions: every
 * deleted seq is redacted; nothing else of a person is; each redacted reply belongs to the turn right
 * after a deleted person's message; every redacted seq is raw or compacted, never both; the spans to
 * write again are exactly the active summaries holding a redacted seq. And the memories it reaches
 * are exactly those whose source range holds a taken-back seq (by query, not by their words).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { Span } from '../model/model.js';
import { memoriesOver, planDeletion } from './plan-message-change.js';
import { overlapsAny, seqsOf } from './plan-redaction.js';

type Role = 'user' | 'assistant' | 'tool';

/** A channel: turns of a person's message, then maybe the bot's steps; a prefix cut somewhere. */
const channel = fc
  .array(
    fc.record({
      answered: fc.boolean(),
      toolSteps: fc.integer({ min: 0, max: 2 }),
    }),
    { minLength: 1, maxLength: 30 },
  )
  .chain((turns) => {
    const roles: Role[] = turns.flatMap((t) =>
      t.answered
        ? [
            'user' as const,
            ...Array.from({ length: t.toolSteps }, () => ['assistant', 'tool'] as Role[]).flat(),
            'assistant' as const,
          ]
        : ['user' as const],
    );
    const archive = roles.map((role, i) => ({ seq: i + 1, role }));
    return fc.record({
      archive: fc.constant(archive),
      cuts: fc.uniqueArray(fc.integer({ min: 1, max: archive.length }), { maxLength: 4 }),
      kinds: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
      deleted: fc.uniqueArray(fc.integer({ min: 1, max: archive.length }), { minLength: 1, maxLength: 5 }),
    });
  });

function prefixOf(headSeq: number, cuts: readonly number[], kinds: readonly boolean[]) {
  const ends = [...cuts].sort((a, b) => a - b);
  const spans: Span[] = [];
  let from = 1;
  ends.forEach((end, i) => {
    spans.push(
      kinds[i]
        ? {
            kind: 'summary',
            fromSeq: from,
            toSeq: end,
            text: 's',
            tokens: 1,
            createdGeneration: 1,
            jobId: `j${end}`,
          }
        : { kind: 'truncated', fromSeq: from, toSeq: end, tokens: 1, createdGeneration: 1 },
    );
    from = end + 1;
  });
  return { generation: 1, headSeq, spans };
}

describe('planDeletion', () => {
  test.prop([channel], { numRuns: 300 })('redacts the deleted messages and only their own turns', (c) => {
    const prefix = prefixOf(c.archive.length, c.cuts, c.kinds);
    const plan = planDeletion({ prefix, deleted: c.deleted, archive: c.archive });
    const redacted = new Set(seqsOf(plan.redact));
    for (const seq of c.deleted) expect(redacted.has(seq)).toBe(true);
    for (const m of c.archive)
      if (m.role === 'user' && redacted.has(m.seq)) expect(c.deleted).toContain(m.seq);
    for (const seq of plan.replies) {
      // The person's message its turn answered: the nearest one before it, and it was deleted.
      const owner = [...c.archive].reverse().find((m) => m.seq < seq && m.role === 'user');
      expect(owner && c.deleted.includes(owner.seq)).toBe(true);
      expect(c.archive[seq - 1]?.role).not.toBe('user');
    }
    // A deleted person's message takes its whole turn with it.
    for (const seq of c.deleted) {
      if (c.archive[seq - 1]?.role !== 'user') continue;
      for (const next of c.archive.slice(seq)) {
        if (next.role === 'user') break;
        expect(redacted.has(next.seq)).toBe(true);
      }
    }
    expect([...plan.raw, ...plan.compacted].sort((a, b) => a - b)).toEqual([...redacted]);
    expect(plan.raw.filter((s) => plan.compacted.includes(s))).toEqual([]);
    const summaries = prefix.spans.filter((s) => s.kind === 'summary' && overlapsAny(s, plan.redact));
    expect(plan.resummarize).toEqual(summaries.map((s) => ({ fromSeq: s.fromSeq, toSeq: s.toSeq })));
  });
});

describe('memories a take-back reaches', () => {
  const ranges = fc.array(
    fc.record({ from: fc.integer({ min: 1, max: 30 }), len: fc.integer({ min: 0, max: 4 }) }).map((r) => ({
      fromSeq: r.from,
      toSeq: r.from + r.len,
    })),
    { maxLength: 4 },
  );
  test.prop([ranges, ranges], { numRuns: 300 })(
    'are exactly those whose source range holds a taken-back seq, whatever their words',
    (sources, takenBack) => {
      const memories = sources.map((r, i) => ({ id: String(i), ...r }));
      const taken = new Set(seqsOf(takenBack));
      const reached = new Set(memoriesOver(memories, takenBack).map((m) => m.id));
      for (const m of memories) {
        const holds = seqsOf([m]).some((seq) => taken.has(seq));
        expect(reached.has(m.id)).toBe(holds);
      }
    },
  );
});
