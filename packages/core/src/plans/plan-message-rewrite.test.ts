import { describe, expect, it } from 'vitest';
import { msg, run, summary } from '../../test/builders.js';
import { countersOf } from '../model/channel-counters.js';
import type { StoredMessage } from '../model/model.js';
import { WorkingContext } from '../model/working-context.js';
import {
  contextCopyOf,
  measuredCopy,
  planArchiveRedaction,
  planMessageEdit,
} from './plan-message-rewrite.js';

/** Summary over 1..4 (20 tokens), raw 5..8 (10 tokens each), at generation 2. */
const channel = countersOf(
  new WorkingContext({ generation: 2, spans: [summary(1, 4, 20)], raw: run(5, 8) }).view(),
);
const tombstone = (seq: number, tokens = 3): StoredMessage => ({
  seq,
  role: 'user',
  author: 'u1',
  text: '[message redacted]',
  tokens,
});

describe('planMessageEdit', () => {
  const edit = { seq: 6, text: 'a much longer text', tokens: 40, contextTokens: 20 };

  it('replaces a raw copy: the raw total moves by the difference, the generation goes up', () => {
    const plan = planMessageEdit(
      channel,
      { seq: 6, tokens: 10 },
      { ...edit, contextText: 'a [clipped]', omittedTokens: 20 },
    );
    expect(plan).toEqual({
      kind: 'edit',
      copy: { text: 'a [clipped]', tokens: 20, omittedTokens: 20 },
      raw: true,
      generation: 3,
      rawTokens: 50,
      tokensBefore: 60,
      tokensAfter: 70,
    });
  });

  it('changes only the archive inside the compacted prefix', () => {
    // The store's copy tokens of a prefix message are not read.
    const plan = planMessageEdit(channel, { seq: 2, tokens: 999 }, { ...edit, seq: 2 });
    expect(plan).toMatchObject({ kind: 'edit', raw: false, generation: 2, rawTokens: 40, tokensAfter: 60 });
  });

  it('is missing when the store found no such channel or message', () => {
    expect(planMessageEdit(undefined, undefined, edit)).toEqual({ kind: 'missing' });
    expect(planMessageEdit(channel, undefined, edit)).toEqual({ kind: 'missing' });
    expect(planMessageEdit(channel, { seq: 7, tokens: 10 }, edit)).toEqual({ kind: 'missing' });
  });
});

describe('planArchiveRedaction', () => {
  const found = [2, 6, 7].map((seq) => ({ seq, tokens: seq > 4 ? 10 : 999 }));

  it('writes each held seq once, the last tombstone given; only raw ones move the totals', () => {
    const plan = planArchiveRedaction(channel, found, [
      tombstone(7, 5),
      tombstone(2),
      tombstone(99),
      tombstone(6),
      tombstone(7, 4),
    ]);
    expect(plan.tombstones).toEqual([
      { tombstone: tombstone(2), copy: { tokens: 3 } },
      { tombstone: tombstone(6), copy: { tokens: 3 } },
      { tombstone: tombstone(7, 4), copy: { tokens: 4 } },
    ]);
    expect(plan.copies).toEqual([
      { seq: 6, copy: { tokens: 3 } },
      { seq: 7, copy: { tokens: 4 } },
    ]);
    expect(plan).toMatchObject({ generation: 3, rawTokens: 40 - 7 - 6, tokensBefore: 60, tokensAfter: 47 });
  });

  it('leaves the generation alone when no raw message changes', () => {
    expect(planArchiveRedaction(channel, found, [tombstone(2)])).toMatchObject({
      copies: [],
      generation: 2,
      tokensAfter: 60,
    });
    expect(planArchiveRedaction(channel, found, [])).toMatchObject({ tombstones: [], generation: 2 });
  });

  it('changes nothing in a channel the store does not hold', () => {
    expect(planArchiveRedaction(undefined, [], [tombstone(1)])).toEqual({
      tombstones: [],
      copies: [],
      generation: 0,
      rawTokens: 0,
      tokensBefore: 0,
      tokensAfter: 0,
    });
  });
});

describe('contextCopyOf', () => {
  const archived: StoredMessage = {
    ...msg(3, 400, { role: 'tool', toolCallId: 'c1' }),
    stub: { text: '[old stub]', tokens: 9 },
  };

  it('copies the archive’s text unless the copy has its own', () => {
    expect(contextCopyOf(archived, { tokens: 400 })).toEqual({
      seq: 3,
      role: 'tool',
      author: 'u0',
      text: 'message 3',
      tokens: 400,
      toolCallId: 'c1',
    });
    expect(contextCopyOf(archived, { text: 'mess…', tokens: 50, omittedTokens: 350 })).toMatchObject({
      text: 'mess…',
      tokens: 50,
      omittedTokens: 350,
    });
    expect(contextCopyOf(archived, { text: '[stub]', tokens: 12, stubbed: true })).toMatchObject({
      text: '[stub]',
      stubbed: true,
    });
  });
});

describe('measuredCopy', () => {
  it('is the clipped text and its left-out tokens when clipped, else the tokens alone', () => {
    expect(measuredCopy({ contextTokens: 50, contextText: 'mess…', omittedTokens: 350 })).toEqual({
      text: 'mess…',
      tokens: 50,
      omittedTokens: 350,
    });
    expect(measuredCopy({ contextTokens: 400 })).toEqual({ tokens: 400 });
  });
});
