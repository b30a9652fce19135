import type { Span, StoredMessage } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { describeHistory, historyRange } from './dashboard-history.js';

const message = (seq: number, extra: Partial<StoredMessage> = {}): StoredMessage => ({
  seq,
  role: 'user',
  author: 'ana',
  text: `m${seq}`,
  tokens: 5,
  ...extra,
});

const spans: Span[] = [
  { kind: 'summary', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 9, createdGeneration: 1, jobId: 'j1' },
  { kind: 'truncated', fromSeq: 5, toSeq: 6, tokens: 3, createdGeneration: 2 },
];

describe('historyRange', () => {
  it('reads the newest page, the page before a seq and the messages after one, within the archive', () => {
    expect(historyRange({ kind: 'latest', limit: 50 }, 120)).toEqual({ fromSeq: 71, toSeq: 120 });
    expect(historyRange({ kind: 'latest', limit: 50 }, 10)).toEqual({ fromSeq: 1, toSeq: 10 });
    expect(historyRange({ kind: 'latest', limit: 50 }, 0)).toEqual({ fromSeq: 1, toSeq: 0 });
    expect(historyRange({ kind: 'before', seq: 71, limit: 50 }, 120)).toEqual({ fromSeq: 21, toSeq: 70 });
    expect(historyRange({ kind: 'after', seq: 118, limit: 50 }, 120)).toEqual({ fromSeq: 119, toSeq: 120 });
  });
});

describe('describeHistory', () => {
  it('places each message in its span or the raw context, with stubs and cut texts', () => {
    const history = describeHistory({
      key: 'web:a',
      headSeq: 8,
      fromSeq: 3,
      toSeq: 8,
      spans,
      messages: [
        message(3),
        message(4),
        message(5),
        message(6),
        message(7, { role: 'assistant', toolCalls: [{ id: 'c1', name: 'build_log', arguments: '{}' }] }),
        message(8, {
          role: 'tool',
          text: 'x'.repeat(50),
          stub: { text: '[build_log: 50 chars]', tokens: 7 },
        }),
      ],
      textChars: 20,
    });
    expect(history.prefixEnd).toBe(6);
    expect(history.messages.map((m) => [m.seq, m.place, m.spanFrom])).toEqual([
      [3, 'summarized', 1],
      [4, 'summarized', 1],
      [5, 'truncated', 5],
      [6, 'truncated', 5],
      [7, 'context', undefined],
      [8, 'context', undefined],
    ]);
    expect(history.messages[4]?.toolCalls).toEqual(['build_log']);
    expect(history.messages[5]).toMatchObject({ text: 'x'.repeat(20), chars: 50, stub: { tokens: 7 } });
    // Both spans cover seqs up to the page's end; the summary keeps its text for the page to expand.
    expect(history.spans).toEqual([
      { kind: 'summary', fromSeq: 1, toSeq: 4, tokens: 9, text: 'S1', jobId: 'j1' },
      { kind: 'truncated', fromSeq: 5, toSeq: 6, tokens: 3 },
    ]);
  });

  it('leaves out spans that start after the page', () => {
    const history = describeHistory({
      key: 'web:a',
      headSeq: 8,
      fromSeq: 1,
      toSeq: 3,
      spans,
      messages: [message(1), message(2), message(3)],
    });
    expect(history.spans.map((s) => s.fromSeq)).toEqual([1]);
  });
});
