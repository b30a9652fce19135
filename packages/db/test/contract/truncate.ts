/** The store contract: emergency truncation, alone and racing a pass. */
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, type ContractStores, expectIntact, message } from './support.js';

export function truncateCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  describe('truncate', () => {
    const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

    it('sets the oldest messages aside behind a marker', async () => {
      await appendMany(stores.channels, key, 20);
      const outcome = await stores.channels.truncate(key, request);
      expect(outcome).toEqual({
        kind: 'truncate',
        plan: {
          kind: 'truncate',
          generation: 0,
          fromSeq: 1,
          toSeq: 10,
          extendsLast: false,
          droppedMessages: 10,
          droppedTokens: 100,
          markerTokens: 30,
        },
        generation: 1,
        tokensBefore: 200,
        tokensAfter: 130,
      });
      const view = await expectIntact(stores.channels, key);
      expect(view.spans).toEqual([
        { kind: 'truncated', fromSeq: 1, toSeq: 10, tokens: 30, createdGeneration: 1 },
      ]);
      expect(view.raw[0]?.seq).toBe(11);
    });

    it('extends the marker it follows', async () => {
      await appendMany(stores.channels, key, 20);
      await stores.channels.truncate(key, request);
      const outcome = await stores.channels.truncate(key, request);
      expect(outcome).toMatchObject({
        kind: 'truncate',
        generation: 2,
        plan: { extendsLast: true, fromSeq: 1 },
      });
      const view = await expectIntact(stores.channels, key);
      expect(view.spans).toHaveLength(1);
      expect(view.spans[0]).toMatchObject({
        kind: 'truncated',
        fromSeq: 1,
        tokens: 30,
        createdGeneration: 2,
      });
    });

    it('never separates a tool call from its results', async () => {
      const toolCalls = [{ id: 'c1', name: 'lookup', arguments: '{}' }];
      await stores.channels.append(key, message(1));
      await stores.channels.append(key, message(2));
      await stores.channels.append(key, message(3, { role: 'assistant', author: 'ebb', toolCalls }));
      await stores.channels.append(key, message(4, { role: 'tool', author: 'lookup', toolCallId: 'c1' }));
      for (let i = 5; i <= 10; i++) await stores.channels.append(key, message(i));
      // 30% of 100 tokens ends after the call; the cut moves past its result.
      const outcome = await stores.channels.truncate(key, { ...request, fraction: 0.3, protectRecent: 2 });
      expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
      await expectIntact(stores.channels, key);
    });

    it('keeps a call whose results have not arrived', async () => {
      for (let i = 1; i <= 4; i++) await stores.channels.append(key, message(i));
      await stores.channels.append(
        key,
        message(5, {
          role: 'assistant',
          author: 'ebb',
          toolCalls: [{ id: 'c', name: 'f', arguments: '{}' }],
        }),
      );
      const outcome = await stores.channels.truncate(key, { ...request, fraction: 1, protectRecent: 0 });
      expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
    });

    it('has nothing to do on an empty or fully protected context', async () => {
      expect(await stores.channels.truncate(key, request)).toEqual({ kind: 'nothing', reason: 'empty' });
      await appendMany(stores.channels, key, 3);
      expect(await stores.channels.truncate(key, request)).toEqual({
        kind: 'nothing',
        reason: 'all_protected',
      });
      expect(await stores.channels.generation(key)).toBe(0);
    });
  });
  describe('a truncation while a pass is running', () => {
    const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

    it('cuts nothing when the channel moved past the generation the cut was decided on', async () => {
      await appendMany(stores.channels, key, 20);
      await stores.channels.splice(key, { jobId: 'j0', fromSeq: 1, toSeq: 5, text: 'S', tokens: 12 });
      // Decided on generation 0; a splice made it 1 meanwhile.
      expect(await stores.channels.truncate(key, { ...request, expectedGeneration: 0 })).toEqual({
        kind: 'nothing',
        reason: 'stale',
      });
      expect((await expectIntact(stores.channels, key)).spans.map((s) => s.kind)).toEqual(['summary']);
      expect(await stores.channels.truncate(key, { ...request, expectedGeneration: 1 })).toMatchObject({
        kind: 'truncate',
        generation: 2,
      });
    });

    it('is healed by the pass when the pass covers the marker', async () => {
      await appendMany(stores.channels, key, 20);
      // The pass was planned over 1..10 at generation 0; the truncation lands while it runs.
      await stores.channels.truncate(key, request);
      const outcome = await stores.channels.splice(key, {
        jobId: 'j1',
        fromSeq: 1,
        toSeq: 10,
        text: 'S',
        tokens: 12,
      });
      expect(outcome).toMatchObject({ kind: 'splice', generation: 2, tokensBefore: 130, tokensAfter: 112 });
      const view = await expectIntact(stores.channels, key);
      expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 10]]);
    });

    it('is trimmed by a pass that covers part of it', async () => {
      await appendMany(stores.channels, key, 20);
      await stores.channels.splice(key, { jobId: 'j0', fromSeq: 1, toSeq: 5, text: 'S0', tokens: 20 });
      // A pass planned over 1..8 folds the summary; the truncation (6..14) lands while it runs.
      await stores.channels.truncate(key, request);
      const outcome = await stores.channels.splice(key, {
        jobId: 'j1',
        fromSeq: 1,
        toSeq: 8,
        text: 'S',
        tokens: 12,
      });
      expect(outcome).toMatchObject({ kind: 'splice', generation: 3, messagesRemoved: 0 });
      const view = await expectIntact(stores.channels, key);
      expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([
        ['summary', 1, 8],
        ['truncated', 9, 14],
      ]);
      expect(view.tokens).toBe(12 + 30 + 60);
    });

    it('refuses a summary larger than what it would replace: a pass never makes the context bigger', async () => {
      await appendMany(stores.channels, key, 20);
      // The pass was planned over 1..6; the truncation set 1..10 aside while it ran, so its summary
      // would sit beside the marker, which stays.
      await stores.channels.truncate(key, request);
      const outcome = await stores.channels.splice(key, {
        jobId: 'j1',
        fromSeq: 1,
        toSeq: 6,
        text: 'S',
        tokens: 12,
      });
      expect(outcome).toEqual({
        kind: 'stale',
        reason: 'the summary (12 tokens) is larger than the 0 tokens it would replace',
      });
      const view = await expectIntact(stores.channels, key);
      expect(view.generation).toBe(1);
      expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['truncated', 1, 10]]);
      expect(view.tokens).toBe(30 + 100);
    });

    it('makes a pass that lost to a wider one stale, and loses nothing', async () => {
      await appendMany(stores.channels, key, 20);
      await stores.channels.truncate(key, request);
      const wide = await stores.channels.splice(key, {
        jobId: 'wide',
        fromSeq: 1,
        toSeq: 12,
        text: 'W',
        tokens: 9,
      });
      expect(wide).toMatchObject({ kind: 'splice', messagesRemoved: 2 });
      const narrow = await stores.channels.splice(key, {
        jobId: 'narrow',
        fromSeq: 1,
        toSeq: 6,
        text: 'N',
        tokens: 4,
      });
      expect(narrow.kind).toBe('stale');
      const view = await expectIntact(stores.channels, key);
      expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 12]]);
      expect(view.generation).toBe(2);
    });

    it('keeps every seq covered once through racing truncations and splices', async () => {
      await appendMany(stores.channels, key, 40);
      const work = [
        stores.channels.truncate(key, request),
        stores.channels.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
        stores.channels.truncate(key, { ...request, fraction: 0.3 }),
        stores.channels.splice(key, { jobId: 'b', fromSeq: 1, toSeq: 20, text: 'B', tokens: 5 }),
        stores.channels.append(key, message(41)),
        stores.channels.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
      ];
      await Promise.all(work);
      const view = await expectIntact(stores.channels, key);
      expect(view.headSeq).toBe(41);
    });
  });
}
