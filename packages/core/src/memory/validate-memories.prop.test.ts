/**
 * Whatever a model returns, every memory `validateMemories` keeps satisfies the rules, every
 * proposal is either kept or counted as rejected, validating the result again changes nothing, and a
 * kept memory's source is no wider than the model named it.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { MEMORY_TYPES } from './memory.js';
import { countOf, MAX_MEMORY_TOKENS, validateMemories } from './validate-memories.js';

const tokenizer = new CharTokenizer();
const AUTHORS = ['ana', 'Bo', 'mallory', 'Ébb bot'];

const anyValue = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
);
/** Proposals that are mostly well-shaped, with hostile values, and now and then anything at all. */
const proposal = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record(
      {
        type: fc.oneof(fc.constantFrom(...MEMORY_TYPES), fc.string(), anyValue),
        text: fc.oneof(
          fc.string(),
          fc.string({ minLength: 700, maxLength: 1200 }),
          fc.constantFrom(' ', '\u0000', 'a\u0000b'),
          anyValue,
        ),
        importance: fc.oneof(fc.double(), fc.double({ min: 0, max: 1, noNaN: true }), anyValue),
        speaker: fc.oneof(fc.constantFrom(...AUTHORS, ' ANA ', 'x'.repeat(800)), fc.string(), anyValue),
        fromSeq: fc.oneof(fc.integer({ min: -10, max: 6000 }), anyValue),
        toSeq: fc.oneof(fc.integer({ min: -10, max: 6000 }), anyValue),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.anything() },
);
const range = fc
  .tuple(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 0, max: 500 }))
  .map(([fromSeq, length]) => ({ fromSeq, toSeq: fromSeq + length }));

describe('validateMemories: properties', () => {
  test.prop([fc.array(proposal, { maxLength: 20 }), range])(
    'every kept memory satisfies the rules; nothing is lost uncounted; a second pass changes nothing',
    (proposed, pass) => {
      const context = { ...pass, authors: AUTHORS, tokenizer };
      const result = validateMemories(proposed, context);
      for (const m of result.memories) {
        expect(MEMORY_TYPES).toContain(m.type);
        expect(m.text.trim()).toBe(m.text);
        expect(m.text.length).toBeGreaterThan(0);
        expect(m.text).not.toContain('\u0000');
        expect(tokenizer.count(m.text)).toBeLessThanOrEqual(MAX_MEMORY_TOKENS);
        expect(m.importance).toBeGreaterThanOrEqual(0);
        expect(m.importance).toBeLessThanOrEqual(1);
        if (m.speaker !== undefined) expect(AUTHORS).toContain(m.speaker);
        expect(Number.isSafeInteger(m.fromSeq) && Number.isSafeInteger(m.toSeq)).toBe(true);
        expect(pass.fromSeq).toBeLessThanOrEqual(m.fromSeq);
        expect(m.fromSeq).toBeLessThanOrEqual(m.toSeq);
        expect(m.toSeq).toBeLessThanOrEqual(pass.toSeq);
      }
      expect(result.memories.length + countOf(result.rejected)).toBe(proposed.length);
      expect(validateMemories(result.memories, context)).toEqual({
        memories: result.memories,
        rejected: {},
        repaired: {},
      });
    },
  );

  test.prop([proposal, range])(
    "a kept memory's seqs are within those the model gave: never wider than the source it named",
    (proposed, pass) => {
      const [kept] = validateMemories([proposed], { ...pass, authors: AUTHORS, tokenizer }).memories;
      if (kept === undefined) return;
      const named = proposed as { fromSeq: number; toSeq: number };
      expect(kept.fromSeq).toBeGreaterThanOrEqual(Math.min(named.fromSeq, named.toSeq));
      expect(kept.toSeq).toBeLessThanOrEqual(Math.max(named.fromSeq, named.toSeq));
    },
  );
});
