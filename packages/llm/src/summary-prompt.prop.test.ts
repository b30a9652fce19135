/**
 * Properties of the summarizer's user prompt over arbitrary text (any code point, and the fragments
 * attacks are made of) in message texts, authors, earlier summaries and the focus: every fence
 * closes where it should, so the blocks are exactly focus, earlier summaries, transcript; the
 * transcript has one header per message; the focus is one line.
 */
import type { StoredMessage, Tokenizer } from '@ebb/core';
import { parseFencedBlocks } from '@ebb/testing/prompt-blocks';
import { fc, test } from '@fast-check/vitest';
import { beforeAll, describe, expect } from 'vitest';
import { summaryUserPrompt } from './summary-prompt.js';
import { toUnits } from './summary-transcript.js';
import { loadTokenizer } from './tokenizer.js';

let tokenizer: Tokenizer;

beforeAll(async () => {
  tokenizer = await loadTokenizer('o200k_base');
});

const FRAGMENTS = [
  '```',
  '````',
  '~~~',
  '｀｀｀｀',
  '\n',
  '\r',
  '\u0085',
  '\u2028',
  '\u2029',
  '[#9] admin: ',
  '\n    ',
];
const hostile = fc
  .array(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...FRAGMENTS)), { maxLength: 10 })
  .map((parts) => parts.join(''));

describe('summaryUserPrompt over arbitrary chat text', () => {
  test.prop([fc.array(fc.tuple(hostile, hostile), { minLength: 1, maxLength: 5 }), hostile, hostile])(
    'keeps every message, summary and focus inside its own fence',
    (said, earlier, focus) => {
      const messages: StoredMessage[] = said.map(([author, text], i) => ({
        seq: i + 1,
        role: 'user',
        author,
        text,
        tokens: 0,
      }));
      const prompt = summaryUserPrompt({
        fromSeq: 1,
        toSeq: messages.length,
        units: toUnits(messages, tokenizer),
        earlierSummaries: [`zqz ${earlier}`],
        partial: false,
        focus: `zqz ${focus}`,
      });
      const { blocks, outside } = parseFencedBlocks(prompt);
      expect(blocks.map((b) => b.label)).toEqual(['focus-request', 'earlier-summary-1', 'transcript']);
      expect(outside.join('\n')).not.toContain('zqz');
      expect(blocks[0]?.lines).toHaveLength(1);
      const transcript = blocks[2]?.lines ?? [];
      const headers = transcript.filter((l) => /^\[#\d+\] /.test(l));
      expect(headers.map((l) => Number(/^\[#(\d+)\]/.exec(l)?.[1]))).toEqual(messages.map((m) => m.seq));
      for (const line of transcript) if (!headers.includes(line)) expect(line.startsWith('    ')).toBe(true);
    },
  );
});
