import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { contextEntryOf, measureMessage, toNewMessage } from './measure-message.js';
import { MESSAGE_OVERHEAD_TOKENS, messageTokens } from './tokens.js';

const tokenizer = new CharTokenizer();

describe('measureMessage', () => {
  it('counts a message once, with its speaker and the chat overhead', () => {
    const { entry: m, archivedTokens } = measureMessage(
      { seq: 1, role: 'user', author: 'ana', text: 'deploy at 5pm' },
      tokenizer,
      100,
    );
    // "ana: deploy at 5pm" is 18 characters: 5 tokens of 4 characters, plus the overhead.
    expect(m.tokens).toBe(5 + MESSAGE_OVERHEAD_TOKENS);
    expect(m.omittedTokens).toBeUndefined();
    expect(archivedTokens).toBe(m.tokens);
  });

  it('counts tool calls with the message that makes them', () => {
    const call = {
      role: 'assistant' as const,
      author: 'ebb',
      text: '',
      toolCalls: [{ id: 'c1', name: 'search', arguments: '{"q":"deploy"}' }],
    };
    expect(messageTokens(tokenizer, call)).toBe(MESSAGE_OVERHEAD_TOKENS + 2 + 4 + MESSAGE_OVERHEAD_TOKENS);
  });

  it('clips a message above the cap to head and tail, with a marker saying how much is left out', () => {
    const text = `HEAD ${'x'.repeat(4000)} TAIL`;
    const archived = { seq: 7, role: 'user' as const, author: 'bo', text };
    const { entry: m, archivedTokens } = measureMessage(archived, tokenizer, 200);
    expect(archivedTokens).toBe(messageTokens(tokenizer, archived));
    expect(m.tokens).toBeLessThanOrEqual(200);
    expect(m.text.startsWith('HEAD ')).toBe(true);
    expect(m.text.endsWith(' TAIL')).toBe(true);
    expect(m.text).toMatch(/\[… \d+ tokens of this message left out here; the archive keeps it whole …\]/);
    expect(m.omittedTokens).toBeGreaterThan(800);
    // The archived message is untouched.
    expect(archived.text).toBe(text);
  });
});

describe('toNewMessage', () => {
  it('keeps the whole text for the archive and nothing clipped for a message under the cap', () => {
    const message = { role: 'user' as const, author: 'ana', text: 'deploy at 5pm', platformMessageId: 'p1' };
    const { entry } = measureMessage({ seq: 0, ...message }, tokenizer, 100);

    const appended = toNewMessage(message, tokenizer, 100);

    expect(appended).toEqual({ ...message, tokens: entry.tokens, contextTokens: entry.tokens });
    expect(contextEntryOf(appended, 4)).toEqual({
      seq: 4,
      role: 'user',
      author: 'ana',
      text: 'deploy at 5pm',
      tokens: entry.tokens,
    });
  });

  it('archives a message above the cap whole and gives the context the clipped copy', () => {
    const message = { role: 'user' as const, author: 'bo', text: `HEAD ${'x'.repeat(4000)} TAIL`, ts: 't' };
    const { entry, archivedTokens } = measureMessage({ seq: 0, ...message }, tokenizer, 200);

    const appended = toNewMessage(message, tokenizer, 200);

    expect(appended).toEqual({
      ...message,
      tokens: archivedTokens,
      contextTokens: entry.tokens,
      contextText: entry.text,
      omittedTokens: entry.omittedTokens,
    });
    expect(contextEntryOf(appended, 9)).toEqual({ ...entry, seq: 9 });
  });
});
