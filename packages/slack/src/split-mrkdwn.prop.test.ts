import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { markdownToMrkdwn } from './markdown-to-mrkdwn.js';
import { splitMrkdwn } from './split-mrkdwn.js';

const piece = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30 }),
  fc.constantFrom(
    ' ',
    '\n',
    '\n\n',
    '\n```\n',
    '```ts\n',
    '- item\n',
    '**b**',
    '[l](https://x.io/a)',
    '😀',
    '<@U1>',
    '&',
  ),
);
const markdown = fc.array(piece, { maxLength: 80 }).map((parts) => parts.join(''));
const limit = fc.integer({ min: 40, max: 200 });
const squash = (s: string) => s.replace(/```/g, '').replace(/\s/g, '');

describe('splitMrkdwn properties (on converted Markdown)', () => {
  test.prop([markdown, limit])('every message fits, none is blank, code blocks are balanced', (md, max) => {
    for (const chunk of splitMrkdwn(markdownToMrkdwn(md), max)) {
      expect(chunk.length).toBeLessThanOrEqual(max);
      expect(chunk.trim()).not.toBe('');
      expect(chunk.split('\n').filter((line) => line.trim() === '```').length % 2).toBe(0);
    }
  });

  test.prop([markdown, limit])('only whitespace and fences are added or lost', (md, max) => {
    const mrkdwn = markdownToMrkdwn(md);
    expect(squash(splitMrkdwn(mrkdwn, max).join(''))).toBe(squash(mrkdwn));
  });
});
