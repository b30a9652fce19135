import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import type { ArchivedMessage } from '../model/model.js';
import { summarizeExtractive } from './extractive-summary.js';

const tokenizer = new CharTokenizer();
const messages: ArchivedMessage[] = [
  { seq: 1, role: 'user', author: 'ana', text: 'morning' },
  {
    seq: 2,
    role: 'user',
    author: 'bo',
    text: 'we decided to ship the billing fix behind a flag on 2026-03-01',
  },
  { seq: 3, role: 'user', author: 'ana', text: 'can someone check https://ci.example.com/run/4411 ?' },
  { seq: 4, role: 'user', author: 'cy', text: 'lol' },
  ...Array.from({ length: 200 }, (_, i) => ({
    seq: 5 + i,
    role: 'user' as const,
    author: 'dee',
    text: `chatter line number ${i} with nothing much in it`,
  })),
];

describe('summarizeExtractive', () => {
  it('names the participants and keeps the informative lines, in order, within the budget', () => {
    const text = summarizeExtractive({ earlierSummaries: [], messages, maxTokens: 150, tokenizer });
    expect(tokenizer.count(text)).toBeLessThanOrEqual(150);
    expect(text).toMatch(
      /^Participants: dee \(200\), ana \(2\), bo \(1\), cy \(1\)\. 204 messages \(#1–#204\)\./,
    );
    const decided = text.indexOf('bo: we decided');
    const link = text.indexOf('ana: can someone check https://ci.example.com/run/4411');
    expect(decided).toBeGreaterThan(0);
    expect(link).toBeGreaterThan(decided);
    expect(text).not.toContain('lol');
  });

  it('keeps the newest lines of earlier summaries it folds', () => {
    const earlier =
      'Participants: old.\nNotable messages:\n- zed: the oldest decision\n- zed: the newest decision';
    const text = summarizeExtractive({
      earlierSummaries: [earlier],
      messages: messages.slice(0, 4),
      maxTokens: 80,
      tokenizer,
    });
    expect(text).toContain('Earlier:');
    expect(text).toContain('the newest decision');
    expect(tokenizer.count(text)).toBeLessThanOrEqual(80);
  });

  it('is deterministic', () => {
    const a = summarizeExtractive({ earlierSummaries: [], messages, maxTokens: 300, tokenizer });
    expect(summarizeExtractive({ earlierSummaries: [], messages, maxTokens: 300, tokenizer })).toBe(a);
  });
});
