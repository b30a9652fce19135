import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { splitMessage } from './split-message.js';

const piece = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }),
  fc.constantFrom(
    ' ',
    '\n',
    '\n\n',
    '\n```\n',
    '\n```ts\n',
    '```',
    '- item\n',
    '[a b](https://x.io)',
    '😀',
    'word',
  ),
);
const text = fc.array(piece, { maxLength: 60 }).map((parts) => parts.join(''));
const limit = fc.integer({ min: 20, max: 120 });
/** Backticks only as whole fence lines, so "what was lost" is well defined. */
const fencedText = fc
  .array(
    fc.oneof(
      fc.string({ minLength: 1, maxLength: 30 }).filter((s) => !s.includes('`')),
      fc.constantFrom(' ', '\n', '\n\n', '\n```\n', '\n```ts\n', '- item\n', '😀', 'word'),
    ),
    { maxLength: 60 },
  )
  .map((parts) => parts.join(''));

describe('splitMessage properties', () => {
  test.prop([text, limit])('every message fits the limit and none is blank', (input, max) => {
    for (const chunk of splitMessage(input, max)) {
      expect(chunk.length).toBeLessThanOrEqual(max);
      expect(chunk.trim()).not.toBe('');
    }
  });

  test.prop([text, limit])('every message but the last has its code blocks closed', (input, max) => {
    const fences = (s: string) => s.split('\n').filter((line) => line.trim().startsWith('```')).length;
    const chunks = splitMessage(input, max);
    for (const chunk of chunks.slice(0, -1)) expect(fences(chunk) % 2).toBe(0);
    // A fence mid-line (`x```) is no line of its own until a cut puts it at the start of one.
    const balanced = fences(input) % 2 === 0 && !/[^\n]```/.test(input);
    if (balanced) for (const chunk of chunks) expect(fences(chunk) % 2).toBe(0);
  });

  test.prop([fencedText, limit])('only whitespace and fence lines are added or lost', (input, max) => {
    const squash = (s: string) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('```'))
        .join('')
        .replace(/\s/g, '');
    expect(squash(splitMessage(input, max).join('\n'))).toBe(squash(input));
  });

  test.prop([text.filter((t) => !t.includes('`')), limit])(
    'without code blocks, only the whitespace cut at is lost',
    (input, max) => {
      const squash = (s: string) => s.replace(/\s/g, '');
      expect(squash(splitMessage(input, max).join(''))).toBe(squash(input));
    },
  );
});
