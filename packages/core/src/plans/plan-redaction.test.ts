import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import type { Span, StoredMessage } from '../model/model.js';
import { messageTokens } from '../model/tokens.js';
import {
  historyResultsQuoting,
  REDACTED_MESSAGE,
  rangesAfter,
  redactMessages,
  seqRanges,
  seqsOf,
  spansToResummarize,
} from './plan-redaction.js';

const tokenizer = new CharTokenizer();

describe('seqRanges', () => {
  it('groups seqs into the fewest ranges, whatever their order', () => {
    expect(seqRanges([7, 3, 4, 5, 9, 3, 10])).toEqual([
      { fromSeq: 3, toSeq: 5 },
      { fromSeq: 7, toSeq: 7 },
      { fromSeq: 9, toSeq: 10 },
    ]);
    expect(seqRanges([])).toEqual([]);
    expect(seqsOf(seqRanges([4, 2, 3, 9]))).toEqual([2, 3, 4, 9]);
  });
});

describe('rangesAfter', () => {
  it('reads each seq and its lookahead once: overlapping and touching windows merge', () => {
    expect(rangesAfter([10, 3, 12, 40], 5)).toEqual([
      { fromSeq: 3, toSeq: 8 },
      { fromSeq: 10, toSeq: 17 },
      { fromSeq: 40, toSeq: 45 },
    ]);
    expect(rangesAfter([1, 7], 5)).toEqual([{ fromSeq: 1, toSeq: 12 }]);
    expect(rangesAfter([], 5)).toEqual([]);
  });

  it('covers exactly the union of the windows, in disjoint ranges (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 40 }),
        fc.nat(30),
        (seqs, ahead) => {
          const ranges = rangesAfter(seqs, ahead);
          const wanted = new Set(seqs.flatMap((s) => Array.from({ length: ahead + 1 }, (_, i) => s + i)));
          expect(seqsOf(ranges)).toEqual([...wanted].sort((a, b) => a - b));
          ranges.slice(1).forEach((r, i) => {
            expect(r.fromSeq).toBeGreaterThan((ranges[i]?.toSeq ?? 0) + 1);
          });
        },
      ),
    );
  });
});

describe('spansToResummarize', () => {
  const summary = (fromSeq: number, toSeq: number): Span => ({
    kind: 'summary',
    fromSeq,
    toSeq,
    text: `S${fromSeq}`,
    tokens: 5,
    createdGeneration: 1,
    jobId: `j${fromSeq}`,
  });
  const spans: Span[] = [
    summary(1, 10),
    summary(11, 20),
    { kind: 'truncated', fromSeq: 21, toSeq: 30, tokens: 9, createdGeneration: 2 },
  ];

  it('picks the summary spans that overlap a redacted seq, and no truncation marker', () => {
    expect(spansToResummarize({ spans }, [{ fromSeq: 10, toSeq: 10 }]).map((s) => s.fromSeq)).toEqual([1]);
    expect(spansToResummarize({ spans }, seqRanges([5, 12, 25])).map((s) => s.fromSeq)).toEqual([1, 11]);
    expect(spansToResummarize({ spans }, [{ fromSeq: 21, toSeq: 40 }])).toEqual([]);
  });
});

describe('redactMessages', () => {
  const message = (seq: number, fields: Partial<StoredMessage> = {}): StoredMessage => ({
    seq,
    role: 'user',
    author: seq % 2 ? 'mallory' : 'ana',
    text: `the vault code is ${seq}431-ZEBRA`,
    tokens: 99,
    ...fields,
  });

  it('tombstones the redacted seqs, keeping seq, role, author and tool call ids, and counts them again', () => {
    const call = { id: 'c1', name: 'open_vault', arguments: '{"code":"7431-ZEBRA"}' };
    const out = redactMessages(
      [message(1), message(2), message(3, { role: 'assistant', author: 'ebb', toolCalls: [call] })],
      seqRanges([1, 3]),
      tokenizer,
    );
    expect(out[1]).toEqual(message(2));
    expect(out[0]).toEqual({
      seq: 1,
      role: 'user',
      author: 'mallory',
      text: REDACTED_MESSAGE,
      tokens: messageTokens(tokenizer, { role: 'user', author: 'mallory', text: REDACTED_MESSAGE }),
    });
    expect(out[2]?.toolCalls).toEqual([{ id: 'c1', name: 'open_vault', arguments: '{}' }]);
    expect(JSON.stringify([out[0], out[2]])).not.toContain('ZEBRA');
  });

  it('drops a microcompaction stub, which quotes the result it stands for', () => {
    const stub = {
      text: '[tool result of vault.read, 12 tokens, archived as #4: code 7431-ZEBRA]',
      tokens: 30,
    };
    const [out] = redactMessages(
      [message(4, { role: 'tool', toolCallId: 'c1', stub })],
      seqRanges([4]),
      tokenizer,
    );
    expect(out?.stub).toBeUndefined();
    expect(JSON.stringify(out)).not.toContain('ZEBRA');
  });
});

describe('historyResultsQuoting', () => {
  const result = (seq: number, author: string, text: string): StoredMessage => ({
    seq,
    role: 'tool',
    author,
    text,
    tokens: 9,
    toolCallId: `c${seq}`,
  });

  it('finds the history tools results that quote a redacted seq, and nothing else', () => {
    const results = [
      result(
        10,
        'search_history',
        '#3 mallory (2026-01-01T00:00:00Z): the vault code is 3431-ZEBRA\n#5 ana (…): ok',
      ),
      result(11, 'read_history', '#4 ana (2026-01-01T00:00:00Z): hi\n  #3 is quoted inside, not a header'),
      result(12, 'ci.log', '#3 build step'),
      result(13, 'read_history', 'Nothing in #1–#9.\n#7 ana (…): later'),
    ];
    expect(historyResultsQuoting(results, seqRanges([3]))).toEqual([10]);
    expect(historyResultsQuoting(results, seqRanges([4, 7]))).toEqual([11, 13]);
  });
});
