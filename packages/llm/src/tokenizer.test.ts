/** The real encodings against the bound `ebb config check` counts with before it loads them. */
import { ByteTokenizer } from '@ebb/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from './tokenizer.js';

describe('ByteTokenizer as an upper bound', () => {
  it('counts at least as many tokens as o200k_base and cl100k_base for any text', async () => {
    const bytes = new ByteTokenizer();
    for (const encoding of ['o200k_base', 'cl100k_base'] as const) {
      const tokenizer = await loadTokenizer(encoding);
      fc.assert(
        fc.property(
          fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), fc.lorem()),
          (text) => {
            expect(bytes.count(text)).toBeGreaterThanOrEqual(tokenizer.count(text));
          },
        ),
        { numRuns: 300 },
      );
    }
  });
});
