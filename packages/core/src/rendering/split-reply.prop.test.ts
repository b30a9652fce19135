/**
 * Properties of splitReply for both kinds of fence, over text whose backticks stand only in whole fence
 * lines (so a cut cannot make a fence out of text): each message fits, every message but the last has
 * its code blocks closed, each message less the fences it was given is a slice of the text (in order),
 * and the messages lose nothing but the whitespace cut at and fence lines.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type ReplyFences, splitReply } from './split-reply.js';

const SPANS = /<[^<>\n]*>|\[[^\]\n]*\]\([^)\s]*\)|&(?:amp|lt|gt);/;
const word = fc.string({ minLength: 1, maxLength: 25 }).filter((s) => !s.includes('`'));
/** Text for messages of at most `max`: its longest fence line still fits a message, yet is reopened bare. */
const reply = (max: number) =>
  fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: word },
        {
          weight: 3,
          arbitrary: fc.constantFrom(
            ' ',
            '\n',
            '\n\n',
            '😀',
            '• item\n',
            '<@U1> ',
            '[a b](https://x.io)',
            '&amp;',
          ),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            '\n```\n',
            '\n```ts\n',
            `\n\`\`\`${'i'.repeat(Math.floor(max / 4) - 2)}\n`,
          ),
        },
      ),
      { maxLength: 90 },
    )
    .map((atoms) => atoms.join(''));
const sized = fc.integer({ min: 20, max: 160 }).chain((max) => fc.tuple(reply(max), fc.constant(max)));
const fences = fc.constantFrom<ReplyFences>('bare', 'with-info');

const fenceTest = (style: ReplyFences) => (line: string) =>
  style === 'bare' ? line.trim() === '```' : line.trim().startsWith('```');
const fenceCount = (chunk: string, isFence: (line: string) => boolean) =>
  chunk.split('\n').filter(isFence).length;
const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

describe('splitReply properties', () => {
  test.prop([sized, fences])(
    'messages fit, are not blank and keep surrogate pairs whole',
    ([text, max], style) => {
      for (const chunk of splitReply(text, { limit: max, unbreakable: SPANS, fences: style })) {
        expect(chunk.length).toBeLessThanOrEqual(max);
        expect(chunk.trim()).not.toBe('');
        expect(isLow(chunk.charCodeAt(0))).toBe(false);
        expect(isHigh(chunk.charCodeAt(chunk.length - 1))).toBe(false);
      }
    },
  );

  test.prop([sized, fences])('no message but the last ends inside a code block', ([text, max], style) => {
    const isFence = fenceTest(style);
    const chunks = splitReply(text, { limit: max, unbreakable: SPANS, fences: style });
    for (const chunk of chunks.slice(0, -1)) expect(fenceCount(chunk, isFence) % 2).toBe(0);
    if (fenceCount(text, isFence) % 2 === 0) expect(fenceCount(chunks.at(-1) ?? '', isFence) % 2).toBe(0);
  });

  test.prop([sized, fences])(
    'each message less its first and last fence line is the next slice of the text',
    ([text, max], style) => {
      const isFence = fenceTest(style);
      let from = 0;
      for (const chunk of splitReply(text, { limit: max, unbreakable: SPANS, fences: style })) {
        const lines = chunk.split('\n');
        if (isFence(lines[0] ?? '')) lines.shift();
        if (lines.length > 0 && isFence(lines.at(-1) ?? '')) lines.pop();
        const kept = lines.join('\n');
        const at = text.indexOf(kept, from);
        expect(at).toBeGreaterThanOrEqual(0);
        from = at + kept.length;
      }
    },
  );

  test.prop([sized, fences])(
    'joined, they give back the text but for cut whitespace and fence lines',
    ([text, max], style) => {
      const isFence = fenceTest(style);
      const content = (s: string) =>
        s
          .split('\n')
          .filter((line) => !isFence(line))
          .join('')
          .replace(/\s/g, '');
      const chunks = splitReply(text, { limit: max, unbreakable: SPANS, fences: style });
      expect(content(chunks.join('\n'))).toBe(content(text));
    },
  );
});
