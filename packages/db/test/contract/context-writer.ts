/**
 * The store contract of the `ContextWriter`: compaction's three writes to the working context (a
 * pass's splice, emergency truncation, microcompaction's stubs). One suite, since its cases cross the
 * three: a truncation lands while a pass runs, a stub is refused for what a truncation set aside.
 */
import type { ChannelDirectory, ContextMessage, ContextWriter, TurnLog } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  appendMany,
  type ContractContext,
  expectIntact,
  type IntactReads,
  message,
  stubOf,
  toolTurns,
} from './support.js';

/** The context writer, and what its cases fill a channel with and read the outcome back through. */
export type ContextWriterUnderTest = ContextWriter &
  IntactReads &
  Pick<TurnLog, 'append' | 'generation'> &
  Pick<ChannelDirectory, 'listChannels'>;

export function contextWriterContract(current: () => ContractContext<ContextWriterUnderTest>): void {
  describe('ContextWriter', () => {
    let store: ContextWriterUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    describe('splice', () => {
      it('replaces the range with its summary, drops the raw messages and bumps the generation', async () => {
        await appendMany(store, key, 10);
        const outcome = await store.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 4,
          text: 'S1',
          tokens: 7,
        });
        expect(outcome).toEqual({
          kind: 'splice',
          generation: 1,
          tokensBefore: 100,
          tokensAfter: 67,
          messagesRemoved: 4,
        });
        const view = await expectIntact(store, key);
        expect(view.spans).toEqual([
          { kind: 'summary', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 7, createdGeneration: 1, jobId: 'j1' },
        ]);
        expect(view.raw.map((m) => m.seq)).toEqual([5, 6, 7, 8, 9, 10]);
        expect(view.tokens).toBe(67);
        expect(await store.generation(key)).toBe(1);
        // The archive keeps everything, whole.
        expect(await store.readArchive(key, 1, 10)).toHaveLength(10);
      });

      it('folds an earlier summary into a wider one', async () => {
        await appendMany(store, key, 10);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 7 });
        const outcome = await store.splice(key, {
          jobId: 'j2',
          fromSeq: 1,
          toSeq: 8,
          text: 'S2',
          tokens: 9,
        });
        expect(outcome).toEqual({
          kind: 'splice',
          generation: 2,
          tokensBefore: 67,
          tokensAfter: 29,
          messagesRemoved: 4,
        });
        const view = await expectIntact(store, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 8]]);
      });

      it('is a no-op the second time', async () => {
        await appendMany(store, key, 10);
        const result = { jobId: 'j1', fromSeq: 1, toSeq: 5, text: 'S', tokens: 5 };
        expect((await store.splice(key, result)).kind).toBe('splice');
        const before = await store.loadContext(key);
        expect(await store.splice(key, result)).toEqual({
          kind: 'noop',
          reason: 'already_applied',
        });
        expect(await store.loadContext(key)).toEqual(before);
        expect(await store.generation(key)).toBe(1);
      });

      it('is stale when a wider summary covers part of its range, or the range is past the head', async () => {
        await appendMany(store, key, 10);
        await store.splice(key, { jobId: 'wide', fromSeq: 1, toSeq: 8, text: 'W', tokens: 5 });
        const narrow = await store.splice(key, {
          jobId: 'narrow',
          fromSeq: 2,
          toSeq: 5,
          text: 'N',
          tokens: 3,
        });
        expect(narrow.kind).toBe('stale');
        const past = await store.splice(key, {
          jobId: 'past',
          fromSeq: 9,
          toSeq: 11,
          text: 'P',
          tokens: 3,
        });
        expect(past.kind).toBe('stale');
        expect(await store.generation(key)).toBe(1);
        await expectIntact(store, key);
      });

      it('applies concurrent deliveries of one result once', async () => {
        await appendMany(store, key, 10);
        const result = { jobId: 'j1', fromSeq: 1, toSeq: 5, text: 'S', tokens: 5 };
        const outcomes = await Promise.all(Array.from({ length: 6 }, () => store.splice(key, result)));
        expect(outcomes.filter((o) => o.kind === 'splice')).toHaveLength(1);
        expect(outcomes.filter((o) => o.kind === 'noop')).toHaveLength(5);
        const view = await expectIntact(store, key);
        expect(view.generation).toBe(1);
        expect(view.spans).toHaveLength(1);
      });

      it('serializes concurrent splices of overlapping ranges', async () => {
        await appendMany(store, key, 12);
        const ranges: [number, number][] = [
          [1, 4],
          [1, 8],
          [1, 6],
          [1, 10],
        ];
        const outcomes = await Promise.all(
          ranges.map(([from, to]) =>
            store.splice(key, {
              jobId: `j${to}`,
              fromSeq: from,
              toSeq: to,
              text: `S${to}`,
              tokens: 5,
            }),
          ),
        );
        const applied = outcomes.filter((o) => o.kind === 'splice');
        expect(applied.length).toBeGreaterThanOrEqual(1);
        const view = await expectIntact(store, key);
        expect(view.generation).toBe(applied.length);
        expect(applied.map((o) => (o.kind === 'splice' ? o.generation : 0)).sort()).toEqual(
          applied.map((_, i) => i + 1),
        );
        expect(view.spans.every((s) => s.kind === 'summary')).toBe(true);
      });
    });
    describe('truncate', () => {
      const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

      it('sets the oldest messages aside behind a marker', async () => {
        await appendMany(store, key, 20);
        const outcome = await store.truncate(key, request);
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
        const view = await expectIntact(store, key);
        expect(view.spans).toEqual([
          { kind: 'truncated', fromSeq: 1, toSeq: 10, tokens: 30, createdGeneration: 1 },
        ]);
        expect(view.raw[0]?.seq).toBe(11);
      });

      it('extends the marker it follows', async () => {
        await appendMany(store, key, 20);
        await store.truncate(key, request);
        const outcome = await store.truncate(key, request);
        expect(outcome).toMatchObject({
          kind: 'truncate',
          generation: 2,
          plan: { extendsLast: true, fromSeq: 1 },
        });
        const view = await expectIntact(store, key);
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
        await store.append(key, message(1));
        await store.append(key, message(2));
        await store.append(key, message(3, { role: 'assistant', author: 'ebb', toolCalls }));
        await store.append(key, message(4, { role: 'tool', author: 'lookup', toolCallId: 'c1' }));
        for (let i = 5; i <= 10; i++) await store.append(key, message(i));
        // 30% of 100 tokens ends after the call; the cut moves past its result.
        const outcome = await store.truncate(key, { ...request, fraction: 0.3, protectRecent: 2 });
        expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
        await expectIntact(store, key);
      });

      it('keeps a call whose results have not arrived', async () => {
        for (let i = 1; i <= 4; i++) await store.append(key, message(i));
        await store.append(
          key,
          message(5, {
            role: 'assistant',
            author: 'ebb',
            toolCalls: [{ id: 'c', name: 'f', arguments: '{}' }],
          }),
        );
        const outcome = await store.truncate(key, { ...request, fraction: 1, protectRecent: 0 });
        expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
      });

      it('has nothing to do on an empty or fully protected context', async () => {
        expect(await store.truncate(key, request)).toEqual({ kind: 'nothing', reason: 'empty' });
        await appendMany(store, key, 3);
        expect(await store.truncate(key, request)).toEqual({
          kind: 'nothing',
          reason: 'all_protected',
        });
        expect(await store.generation(key)).toBe(0);
      });
    });
    describe('a truncation while a pass is running', () => {
      const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

      it('cuts nothing when the channel moved past the generation the cut was decided on', async () => {
        await appendMany(store, key, 20);
        await store.splice(key, { jobId: 'j0', fromSeq: 1, toSeq: 5, text: 'S', tokens: 12 });
        // Decided on generation 0; a splice made it 1 meanwhile.
        expect(await store.truncate(key, { ...request, expectedGeneration: 0 })).toEqual({
          kind: 'nothing',
          reason: 'stale',
        });
        expect((await expectIntact(store, key)).spans.map((s) => s.kind)).toEqual(['summary']);
        expect(await store.truncate(key, { ...request, expectedGeneration: 1 })).toMatchObject({
          kind: 'truncate',
          generation: 2,
        });
      });

      it('is healed by the pass when the pass covers the marker', async () => {
        await appendMany(store, key, 20);
        // The pass was planned over 1..10 at generation 0; the truncation lands while it runs.
        await store.truncate(key, request);
        const outcome = await store.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 10,
          text: 'S',
          tokens: 12,
        });
        expect(outcome).toMatchObject({ kind: 'splice', generation: 2, tokensBefore: 130, tokensAfter: 112 });
        const view = await expectIntact(store, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 10]]);
      });

      it('is trimmed by a pass that covers part of it', async () => {
        await appendMany(store, key, 20);
        await store.splice(key, { jobId: 'j0', fromSeq: 1, toSeq: 5, text: 'S0', tokens: 20 });
        // A pass planned over 1..8 folds the summary; the truncation (6..14) lands while it runs.
        await store.truncate(key, request);
        const outcome = await store.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 8,
          text: 'S',
          tokens: 12,
        });
        expect(outcome).toMatchObject({ kind: 'splice', generation: 3, messagesRemoved: 0 });
        const view = await expectIntact(store, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([
          ['summary', 1, 8],
          ['truncated', 9, 14],
        ]);
        expect(view.tokens).toBe(12 + 30 + 60);
      });

      it('refuses a summary larger than what it would replace: a pass never makes the context bigger', async () => {
        await appendMany(store, key, 20);
        // The pass was planned over 1..6; the truncation set 1..10 aside while it ran, so its summary
        // would sit beside the marker, which stays.
        await store.truncate(key, request);
        const outcome = await store.splice(key, {
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
        const view = await expectIntact(store, key);
        expect(view.generation).toBe(1);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['truncated', 1, 10]]);
        expect(view.tokens).toBe(30 + 100);
      });

      it('makes a pass that lost to a wider one stale, and loses nothing', async () => {
        await appendMany(store, key, 20);
        await store.truncate(key, request);
        const wide = await store.splice(key, {
          jobId: 'wide',
          fromSeq: 1,
          toSeq: 12,
          text: 'W',
          tokens: 9,
        });
        expect(wide).toMatchObject({ kind: 'splice', messagesRemoved: 2 });
        const narrow = await store.splice(key, {
          jobId: 'narrow',
          fromSeq: 1,
          toSeq: 6,
          text: 'N',
          tokens: 4,
        });
        expect(narrow.kind).toBe('stale');
        const view = await expectIntact(store, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 12]]);
        expect(view.generation).toBe(2);
      });

      it('keeps every seq covered once through racing truncations and splices', async () => {
        await appendMany(store, key, 40);
        const work = [
          store.truncate(key, request),
          store.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
          store.truncate(key, { ...request, fraction: 0.3 }),
          store.splice(key, { jobId: 'b', fromSeq: 1, toSeq: 20, text: 'B', tokens: 5 }),
          store.append(key, message(41)),
          store.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
        ];
        await Promise.all(work);
        const view = await expectIntact(store, key);
        expect(view.headSeq).toBe(41);
      });
    });
    describe('stubToolResults', () => {
      it('puts the stubs in the context, keeps the whole results in the archive, and bumps the generation', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        const outcome = await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [stubOf(before.raw, 2), stubOf(before.raw, 4)],
        });
        expect(outcome).toEqual({
          kind: 'stubbed',
          generation: before.generation + 1,
          tokensBefore: before.tokens,
          tokensAfter: before.tokens - 2 * (200 - 12),
          stubbed: 2,
        });
        const view = await expectIntact(store, key);
        expect(view.generation).toBe(before.generation + 1);
        expect(view.raw.find((m) => m.seq === 2)).toEqual({
          seq: 2,
          role: 'tool',
          author: 'ci.log',
          text: '[stub of #2]',
          tokens: 12,
          toolCallId: 'c0',
          stubbed: true,
        });
        expect(view.raw.find((m) => m.seq === 6)?.stubbed).toBeUndefined();
        // The channel counts what microcompaction did, for `ebb status` and the dashboard.
        const [listed] = (await store.listChannels()).filter((c) => c.key === key);
        expect(listed?.microcompaction).toEqual({ stubbed: 2, tokensSaved: 2 * (200 - 12) });
        const archive = await store.readArchive(key, 2, 6);
        expect(archive.map((m) => [m.seq, m.text, m.tokens, m.stub])).toEqual([
          [2, 'log 0', 200, { text: '[stub of #2]', tokens: 12 }],
          [3, '', 10, undefined],
          [4, 'log 1', 200, { text: '[stub of #4]', tokens: 12 }],
          [5, '', 10, undefined],
          [6, 'log 2', 200, undefined],
        ]);
      });

      it('changes nothing when the channel moved on, or a seq is not a raw tool result left to stub', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        const stale = async (expectedGeneration: number, stubs: ContextMessage[]) => {
          const outcome = await store.stubToolResults(key, { expectedGeneration, stubs });
          expect(outcome.kind).toBe('stale');
          expect(await store.loadContext(key)).toEqual(before);
        };
        await stale(before.generation + 1, [stubOf(before.raw, 2)]);
        await stale(before.generation, [stubOf(before.raw, 2), stubOf(before.raw, 3)]); // a call, not a result
        await stale(before.generation, [stubOf(before.raw, 7)]); // a user message
        await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [stubOf(before.raw, 2)],
        });
        const stubbed = await store.loadContext(key);
        const again = await store.stubToolResults(key, {
          expectedGeneration: stubbed.generation,
          stubs: [stubOf(stubbed.raw, 2)],
        });
        expect(again.kind).toBe('stale');
      });

      it('is stale when a stub names a seq twice, and changes nothing', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        const outcome = await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [stubOf(before.raw, 2), stubOf(before.raw, 2)],
        });
        expect(outcome.kind).toBe('stale');
        expect(await store.loadContext(key)).toEqual(before);
        await expectIntact(store, key);
      });

      it('changes nothing, the generation included, when given no stubs', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        const outcome = await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [],
        });
        expect(outcome).toEqual({
          kind: 'stubbed',
          generation: before.generation,
          tokensBefore: before.tokens,
          tokensAfter: before.tokens,
          stubbed: 0,
        });
        expect(await store.generation(key)).toBe(before.generation);
        expect(await store.loadContext(key)).toEqual(before);
      });

      it('refuses a stub for a result a truncation already set aside', async () => {
        await toolTurns(store, key);
        for (let i = 8; i <= 20; i++) await store.append(key, message(i));
        const before = await store.loadContext(key);
        await store.truncate(key, { fraction: 0.5, protectRecent: 4, markerTokens: 30 });
        const cut = await store.loadContext(key);
        const outcome = await store.stubToolResults(key, {
          expectedGeneration: cut.generation,
          stubs: [stubOf(before.raw, 2)],
        });
        expect(outcome.kind).toBe('stale');
        await expectIntact(store, key);
      });
    });
  });
}
