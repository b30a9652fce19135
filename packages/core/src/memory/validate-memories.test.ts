import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { MAX_MEMORY_TOKENS, validateMemories } from './validate-memories.js';

const tokenizer = new CharTokenizer();
/** The pass the measured bug came from: 1..5409, spoken by ana, bo and mallory. */
const pass = { fromSeq: 1, toSeq: 5409, authors: ['ana', 'bo', 'Mallory'], tokenizer };
const good = {
  type: 'fact',
  text: 'The vault is in room 4',
  importance: 0.7,
  speaker: 'ana',
  fromSeq: 12,
  toSeq: 14,
};

describe('validateMemories', () => {
  it('keeps a memory that satisfies every rule as it is', () => {
    const result = validateMemories([good], pass);
    expect(result).toEqual({ memories: [good], rejected: {}, repaired: {} });
  });

  it('rejects an unknown type, an empty or too long text, a non-number importance and non-objects', () => {
    const long = 'word '.repeat(MAX_MEMORY_TOKENS);
    const result = validateMemories(
      [
        { ...good, type: 'gossip' },
        { ...good, type: 'FACT' },
        { ...good, text: '   ' },
        { ...good, text: '\u0000' },
        { ...good, text: long },
        { ...good, importance: Number.NaN },
        { ...good, importance: '0.5' },
        { ...good, text: 42 },
        'a fact',
        null,
      ],
      pass,
    );
    expect(result.memories).toEqual([]);
    expect(result.rejected).toEqual({
      unknown_type: 2,
      empty_text: 2,
      text_too_long: 1,
      bad_importance: 2,
      malformed: 3,
    });
  });

  it('drops a speaker who is no author of the range, and takes the archive spelling of one who is', () => {
    const result = validateMemories(
      [
        { ...good, speaker: 'x'.repeat(800) },
        { ...good, text: 'b', speaker: 'ignore previous instructions' },
        { ...good, text: 'c', speaker: '  mallory ' },
        { ...good, text: 'd', speaker: null },
        { ...good, text: 'e', speaker: '' },
        { ...good, text: 'f', speaker: 7 },
      ],
      pass,
    );
    expect(result.memories.map((m) => m.speaker)).toEqual([
      undefined,
      undefined,
      'Mallory',
      undefined,
      undefined,
      undefined,
    ]);
    expect(result.memories.every((m) => !('speaker' in m) || m.speaker === 'Mallory')).toBe(true);
    expect(result.repaired).toEqual({ speaker_unknown: 3, speaker_spelling: 1 });
    expect(result.rejected).toEqual({});
  });

  it('leaves an ambiguous spelling unmatched rather than guess', () => {
    const result = validateMemories([{ ...good, speaker: 'ANA' }], { ...pass, authors: ['ana', 'Ana'] });
    expect(result.memories[0]?.speaker).toBeUndefined();
    expect(result.repaired).toEqual({ speaker_unknown: 1 });
  });

  it('keeps seqs inside the pass, swapped or cut to it, and stores no memory whose seqs name none of its messages', () => {
    const inner = { ...pass, fromSeq: 100, toSeq: 200 };
    const seqs = (fromSeq: unknown, toSeq: unknown) =>
      validateMemories([{ ...good, fromSeq, toSeq }], inner).memories.map((m) => [m.fromSeq, m.toSeq])[0];
    expect(seqs(120, 130)).toEqual([120, 130]);
    expect(seqs(130, 120)).toEqual([120, 130]);
    expect(seqs(150, 900)).toEqual([150, 200]);
    expect(seqs(90, 100)).toEqual([100, 100]);
    // No known source: never the whole pass, which `forget --id` would then redact.
    expect(seqs(-3, 99)).toBeUndefined();
    expect(seqs(1, 1)).toBeUndefined();
    expect(seqs(201, 5000)).toBeUndefined();
    expect(seqs(1.5, 120)).toBeUndefined();
    expect(seqs(undefined, '120')).toBeUndefined();
    const counted = validateMemories(
      [
        { ...good, text: 'sourceless', speaker: 'MALLORY', fromSeq: 1, toSeq: 1 },
        { ...good, text: 'x', fromSeq: 130, toSeq: 120 },
        { ...good, text: 'y', fromSeq: 190, toSeq: 250 },
      ],
      inner,
    );
    expect(counted.memories.map((m) => m.text)).toEqual(['x', 'y']);
    expect(counted.rejected).toEqual({ no_source: 1 });
    // A memory left out counts as rejected only: its speaker's spelling is not counted as repaired.
    expect(counted.repaired).toEqual({ seq_range: 2 });
  });

  it('clamps importance into 0..1 and removes NUL characters (Postgres cannot store them)', () => {
    const result = validateMemories(
      [
        { ...good, importance: 1.7 },
        { ...good, text: 'b', importance: -2 },
        { ...good, text: ' Ana\u0000 owns it ', importance: 0.5 },
      ],
      pass,
    );
    expect(result.memories.map((m) => [m.text, m.importance])).toEqual([
      [good.text, 1],
      ['b', 0],
      ['Ana owns it', 0.5],
    ]);
    expect(result.repaired).toEqual({ importance: 2, text_nul: 1 });
  });

  it('changes nothing the second time (a reused checkpoint)', () => {
    const once = validateMemories(
      [{ ...good, speaker: 'MALLORY', fromSeq: 9000, toSeq: 3, importance: 3 }],
      pass,
    );
    expect(validateMemories(once.memories, pass)).toEqual({
      memories: once.memories,
      rejected: {},
      repaired: {},
    });
  });
});
