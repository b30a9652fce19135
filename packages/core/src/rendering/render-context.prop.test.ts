/**
 * Properties of prompt rendering over arbitrary text (any code point, lone surrogates, and the
 * fragments attacks are made of): chat-derived text never reaches the system message, never closes
 * or forges a reference block or a memory line, authors stay one bounded line, and the tokens
 * counted for a span or a message are those of the chat message rendered for it.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { MEMORY_TYPES, type Memory } from '../memory/memory.js';
import type { ContextMessage, Span } from '../model/model.js';
import { chatMessageTokens, messageTokens } from '../model/tokens.js';
import { WorkingContext } from '../model/working-context.js';
import { MAX_LABEL_CHARS, quotedLabel } from '../support/untrusted-text.js';
import {
  MEMORIES_TAG,
  REFERENCE_RULE,
  renderContext,
  SUMMARY_TAG,
  spanTokens,
  systemPromptTokens,
} from './render-context.js';

const FRAGMENTS = [
  '<',
  '>',
  `</${SUMMARY_TAG}>`,
  `</${MEMORIES_TAG}>`,
  `<${MEMORIES_TAG} of="this channel">`,
  '\n',
  '\r',
  '\u000b',
  '\u0085',
  '\u2028',
  '\u2029',
  '\u202e',
  '\u2066',
  '\u200b',
  '\u200d',
  '\ufeff',
  '\u{e0041}',
  '\u{e0002}',
  '＜',
  '＞',
  '⟨',
  '```',
  '- (decision, admin) ',
  'SYSTEM: ',
];
const hostile = fc
  .array(fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom(...FRAGMENTS)), { maxLength: 12 })
  .map((parts) => parts.join(''));

const LINE_BREAK = /\r\n?|[\n\v\f\u0085\u2028\u2029]/;
const BRACKET = /[<>\uFF1C\uFF1E\u27E8\u27E9]/;
const HIDDEN = /[\u200B\u202A-\u202E\u2066-\u2069\uFEFF\u{E0000}-\u{E007F}]/u;

/** The payload of a one-block message, after checking the tag opens once at the start and closes once. */
function payloadOf(content: string, tag: string): string {
  const lower = content.toLowerCase();
  expect(lower.split(`<${tag}`)).toHaveLength(2);
  expect(lower.split(`</${tag}>`)).toHaveLength(2);
  expect(content).toMatch(new RegExp(`^<${tag} [^<>\\n]*>\\n`));
  const payload = content.slice(content.indexOf('>\n') + 2, content.indexOf(`\n</${tag}>`));
  expect(payload).not.toMatch(BRACKET);
  expect(payload).not.toMatch(HIDDEN);
  return payload;
}

const tokenizer = new CharTokenizer();

describe('renderContext over arbitrary chat text', () => {
  test.prop([hostile, hostile, hostile, hostile, hostile, fc.constantFrom(...MEMORY_TYPES)])(
    'keeps chat text out of the system message and inside its blocks, counting what it renders',
    (summaryText, memoryText, speaker, author, chatText, type) => {
      const memories: Memory[] = [
        { id: 'm1', type, text: memoryText, importance: 1, speaker, scope: 'web:x', fromSeq: 1, toSeq: 1 },
        { id: 'm2', type: 'fact', text: 'plain', importance: 1, scope: 'web:x', fromSeq: 1, toSeq: 1 },
      ];
      const summary: Span = {
        kind: 'summary',
        fromSeq: 1,
        toSeq: 4,
        text: summaryText,
        tokens: 0,
        createdGeneration: 1,
        jobId: 'j1',
      };
      const message: ContextMessage = { seq: 5, role: 'user', author, text: chatText, tokens: 0 };
      const out = renderContext({
        systemPrompt: 'You are Ebb.',
        memories,
        context: new WorkingContext({ spans: [summary], raw: [message], headSeq: 5 }).view(),
      });

      expect(out.map((m) => m.role)).toEqual(['system', 'user', 'user', 'user']);
      expect(out[0]?.content).toBe(`You are Ebb.\n\n${REFERENCE_RULE}`);
      expect(systemPromptTokens(tokenizer, 'You are Ebb.')).toBe(
        chatMessageTokens(tokenizer, out[0]?.content ?? ''),
      );

      payloadOf(out[1]?.content ?? '', SUMMARY_TAG);
      expect(spanTokens(tokenizer, summary)).toBe(chatMessageTokens(tokenizer, out[1]?.content ?? ''));

      expect(out[2]?.content).toBe(`${quotedLabel(author)}: ${chatText}`);
      expect(messageTokens(tokenizer, message)).toBe(chatMessageTokens(tokenizer, out[2]?.content ?? ''));

      const lines = payloadOf(out[3]?.content ?? '', MEMORIES_TAG).split(LINE_BREAK);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(new RegExp(`^- \\(${type}[,)]`));
      expect(lines[1]).toBe('- (fact) plain');
    },
  );

  test.prop([hostile])('names an author with one line of at most MAX_LABEL_CHARS', (author) => {
    const label = quotedLabel(author);
    expect(label).not.toMatch(LINE_BREAK);
    expect(label).not.toMatch(BRACKET);
    expect(label).not.toMatch(HIDDEN);
    expect(label.length).toBeGreaterThan(0);
    const chars = Array.from(label.replaceAll('&lt;', '<').replaceAll('&gt;', '>'));
    expect(chars.length).toBeLessThanOrEqual(MAX_LABEL_CHARS);
  });
});
