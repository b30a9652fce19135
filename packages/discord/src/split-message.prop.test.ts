import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { splitMessage } from './split-message.js';

const piece = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }),
  fc.constantFrom(' ', '\n', '```', '```ts', '😀', 'word'),
);
const text = fc.array(piece, { maxLength: 60 }).map((parts) => parts.join(''));
const limit = fc.integer({ min: 20, max: 120 });

describe('splitMessage properties', () => {
  test.prop([text, limit])('every message fits the limit and none is blank', (input, max) => {
    for (const chunk of splitMessage(input, max)) {
      expect(chunk.length).toBeLessThanOrEqual(max);
      expect(chunk.trim()).not.toBe('');
    }
  });

  test.prop([text.filter((t) => !t.includes('`')), limit])(
    'without code blocks, only the whitespace cut at is lost',
    (input, max) => {
      const squash = (s: string) => s.replace(/\s/g, '');
      expect(squash(splitMessage(input, max).join(''))).toBe(squash(input));
    },
  );
});
