/**
 * Properties of what a deletion removes, over random channels (people's messages, the bot's turns
 * with tool steps, a compacted prefix of summaries and truncation markers) and random deletions: every
 * deleted seq is redacted; nothing else of a person is; each redacted reply belongs to the turn right
 * after a deleted person's message; every redacted seq is raw or compacted, never both; the spans to
 * write again are exactly the active summaries holding a redacted seq. And of the memories it drops:
 * only those over a removed seq, and always one whose whole range is removed.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { Span } from '../model/model.js';
import { memoriesTakenBack, planDeletion } from './plan-message-change.js';
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

describe('memoriesTakenBack', () => {
  const text = fc.array(fc.constantFrom('alpha', 'bravo', 'charlie', 'delta', 'echo', 'hunter42'), {
    minLength: 1,
    maxLength: 4,
  });
  const setting = fc.record({
    messages: fc.array(text, { minLength: 1, maxLength: 8 }),
    removed: fc.uniqueArray(fc.integer({ min: 1, max: 8 }), { maxLength: 3 }),
    memories: fc.array(
      fc.record({ from: fc.integer({ min: 1, max: 8 }), len: fc.integer({ min: 0, max: 3 }), text }),
      { maxLength: 6 },
    ),
  });
  test.prop([setting], { numRuns: 300 })(
    'drops only memories over a removed seq, and every one whose range is wholly removed',
    (s) => {
      const archive = s.messages.map((words, i) => ({ seq: i + 1, text: words.join(' ') }));
      const removedSeqs = new Set(s.removed.filter((seq) => seq <= archive.length));
      const removed = archive.filter((m) => removedSeqs.has(m.seq));
      const kept = archive.filter((m) => !removedSeqs.has(m.seq));
      const memories = s.memories.map((m, i) => ({
        id: String(i),
        text: m.text.join(' '),
        fromSeq: m.from,
        toSeq: m.from + m.len,
      }));
      const dropped = new Set(memoriesTakenBack(memories, removed, kept));
      for (const m of memories) {
        const inRange = archive.filter((a) => a.seq >= m.fromSeq && a.seq <= m.toSeq);
        const hits = inRange.filter((a) => removedSeqs.has(a.seq));
        if (hits.length === 0) expect(dropped.has(m.id)).toBe(false);
        else if (hits.length === inRange.length) expect(dropped.has(m.id)).toBe(true);
        // Its words all said in a kept message of its range too: it did not come from the removed one.
        const keptWords = new Set(
          inRange.filter((a) => !removedSeqs.has(a.seq)).flatMap((a) => a.text.split(' ')),
        );
        if (hits.length < inRange.length && m.text.split(' ').every((w) => keptWords.has(w)))
          expect(dropped.has(m.id)).toBe(false);
      }
    },
  );
});
