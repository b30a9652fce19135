/**
 * The store contract of `Forgetting` and `PlatformChanges`: taking things back. Forgetting (`ebb forget`) and the
 * platforms' deletions and edits find messages, overwrite them, and put summaries written again in place.
 */
import type { ContextWriter, Forgetting, NewTakeBack, PlatformChanges, TurnLog } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  appendMany,
  type ContractContext,
  expectIntact,
  type IntactReads,
  message,
  stubOf,
  tombstoneOf,
  toolTurns,
} from './support.js';

/** The archive editor, and what its cases fill and compact a channel with and read it back through. */
export type ForgettingUnderTest = Forgetting &
  PlatformChanges &
  IntactReads &
  Pick<TurnLog, 'append' | 'generation'> &
  Pick<ContextWriter, 'splice' | 'stubToolResults'>;

/** What the redactions of these cases record (the take-back's own cases are in take-back-log.ts). */
const DELETED: NewTakeBack = { kind: 'deleted', ranges: [{ fromSeq: 1, toSeq: 1 }], platformMessageIds: [] };

export function forgettingContract(current: () => ContractContext<ForgettingUnderTest>): void {
  describe('Forgetting and PlatformChanges', () => {
    let store: ForgettingUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    describe('findAuthored', () => {
      it('finds the seqs an author wrote, per channel', async () => {
        const other = `${key}:other`;
        await appendMany(store, key, 7);
        await appendMany(store, other, 2);
        const found = (await store.findAuthored('u1')).filter((a) => a.channelKey.startsWith(key));
        expect(found).toEqual([
          { channelKey: key, seqs: [1, 4, 7] },
          { channelKey: other, seqs: [1] },
        ]);
        expect(await store.findAuthored(`nobody-${key}`)).toEqual([]);
        // One channel only.
        expect(await store.findAuthored('u1', other)).toEqual([{ channelKey: other, seqs: [1] }]);
        expect(await store.findAuthored('U1', key)).toEqual([]);
      });
    });
    describe('findContaining', () => {
      it('finds the seqs whose text or tool call holds a string, ignoring case, whoever wrote them', async () => {
        const other = `${key}:other`;
        await appendMany(store, key, 3);
        await store.append(
          key,
          message(4, { role: 'assistant', author: 'ebb', text: 'the code is 7431-Zebra' }),
        );
        await store.append(
          key,
          message(5, {
            role: 'assistant',
            author: 'ebb',
            text: '',
            toolCalls: [{ id: 'c1', name: 'vault', arguments: '{"code":"7431-ZEBRA"}' }],
          }),
        );
        await store.append(other, message(1, { text: 'VAULT 7431-zebra, 100% _sure_' }));
        const found = (await store.findContaining('7431-zebra')).filter((a) => a.channelKey.startsWith(key));
        expect(found).toEqual([
          { channelKey: key, seqs: [4, 5] },
          { channelKey: other, seqs: [1] },
        ]);
        // LIKE wildcards in the text are plain characters.
        expect((await store.findContaining('100%')).filter((a) => a.channelKey === other)).toEqual([
          { channelKey: other, seqs: [1] },
        ]);
        expect((await store.findContaining('_s')).filter((a) => a.channelKey === other)).toEqual([
          { channelKey: other, seqs: [1] },
        ]);
        expect((await store.findContaining('%%')).filter((a) => a.channelKey.startsWith(key))).toEqual([]);
        // A tool call is searched in its name and arguments, never in its JSON keys or id.
        for (const notText of ['arguments', 'c1', '"name"']) {
          expect(
            (await store.findContaining(notText)).filter((a) => a.channelKey === key),
            notText,
          ).toEqual([]);
        }
      });
    });
    describe('findByPlatformIds', () => {
      it('finds the seqs of platform ids, in seq order, leaving out ids it never held', async () => {
        await appendMany(store, key, 5);
        expect(await store.findByPlatformIds(key, ['p4', 'nope', 'p2', 'p4'])).toEqual([
          { platformMessageId: 'p2', seq: 2 },
          { platformMessageId: 'p4', seq: 4 },
        ]);
        expect(await store.findByPlatformIds(`${key}:other`, ['p2'])).toEqual([]);
        expect(await store.findByPlatformIds(key, [])).toEqual([]);
      });
    });
    describe('editMessage', () => {
      it('edits a message: the archive keeps only the new text, a raw copy changes in place', async () => {
        await appendMany(store, key, 6);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 3, text: 'S1', tokens: 5 });
        // Raw (seq 5): a clipped copy, the totals moved by the difference, the generation bumped.
        const raw = await store.editMessage(key, {
          seq: 5,
          text: 'the new, much longer text',
          tokens: 40,
          contextTokens: 20,
          contextText: 'the new, [clipped] text',
          omittedTokens: 20,
        });
        expect(raw).toEqual({ kind: 'edited', raw: true, generation: 2, tokensBefore: 35, tokensAfter: 45 });
        const view = await expectIntact(store, key);
        expect(view.raw.find((m) => m.seq === 5)).toMatchObject({
          text: 'the new, [clipped] text',
          tokens: 20,
          omittedTokens: 20,
        });
        expect((await store.readArchive(key, 5, 5))[0]).toMatchObject({
          text: 'the new, much longer text',
          tokens: 40,
          author: 'u2',
          role: 'user',
        });
        // Back to a short text: no clipped copy is left.
        await store.editMessage(key, { seq: 5, text: 'short', tokens: 4, contextTokens: 4 });
        const again = await expectIntact(store, key);
        expect(again.raw.find((m) => m.seq === 5)).toEqual(
          expect.objectContaining({ text: 'short', tokens: 4 }),
        );
        expect(again.raw.find((m) => m.seq === 5)?.omittedTokens).toBeUndefined();
        // In the compacted prefix: the archive only; the context and its generation stay.
        const before = await store.loadContext(key);
        expect(await store.editMessage(key, { seq: 2, text: 'edited', tokens: 6, contextTokens: 6 })).toEqual(
          {
            kind: 'edited',
            raw: false,
            generation: before.generation,
            tokensBefore: before.tokens,
            tokensAfter: before.tokens,
          },
        );
        expect(await store.loadContext(key)).toEqual(before);
        expect((await store.readArchive(key, 2, 2))[0]?.text).toBe('edited');
        expect(await store.editMessage(key, { seq: 99, text: 'x', tokens: 1, contextTokens: 1 })).toEqual({
          kind: 'missing',
        });
        // The platform id still names it: a redelivery is a duplicate.
        expect(await store.append(key, message(5, { platformMessageId: 'p5' }))).toMatchObject({
          seq: 5,
          inserted: false,
        });
      });
    });
    describe('redactArchive', () => {
      const tombstone = tombstoneOf;

      it('overwrites archived messages with tombstones; raw ones change the context and its tokens', async () => {
        await appendMany(store, key, 8);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
        const outcome = await store.redactArchive(key, [tombstone(2), tombstone(6), tombstone(99)], DELETED);
        expect(outcome).toMatchObject({ redacted: 2, raw: 1, generation: 2 });
        const view = await expectIntact(store, key);
        expect(view.tokens).toBe(5 + 10 + 3 + 10 + 10);
        expect(view.raw.map((m) => m.text)).toEqual(['message 5', '[gone]', 'message 7', 'message 8']);
        expect((await store.readArchive(key, 1, 8)).map((m) => m.text)).toEqual([
          'message 1',
          '[gone]',
          'message 3',
          'message 4',
          'message 5',
          '[gone]',
          'message 7',
          'message 8',
        ]);
        // Only in the summarized prefix: the context does not change, nor does the generation.
        expect(await store.redactArchive(key, [tombstone(3)], DELETED)).toMatchObject({
          redacted: 1,
          raw: 0,
          generation: 2,
        });
        // A message delivered again after it was redacted is still a duplicate, not a new message.
        const again = await store.append(key, message(2, { platformMessageId: 'p2' }));
        expect(again).toMatchObject({ seq: 2, inserted: false });
      });

      it('counts a tombstone given twice once', async () => {
        await appendMany(store, key, 8);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
        expect(await store.redactArchive(key, [tombstone(6), tombstone(6)], DELETED)).toMatchObject({
          redacted: 1,
          raw: 1,
          generation: 2,
        });
        const view = await expectIntact(store, key);
        expect(view.tokens).toBe(5 + 10 + 3 + 10 + 10);
      });

      it('loses the stub when forgetting overwrites the result with a tombstone', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [stubOf(before.raw, 2)],
        });
        await store.redactArchive(
          key,
          [{ seq: 2, role: 'tool', author: 'ci.log', text: '[redacted]', tokens: 5, toolCallId: 'c0' }],
          DELETED,
        );
        const [archived] = await store.readArchive(key, 2, 2);
        expect(archived?.stub).toBeUndefined();
        expect(archived?.text).toBe('[redacted]');
        const view = await expectIntact(store, key);
        expect(view.raw.find((m) => m.seq === 2)).toMatchObject({ text: '[redacted]', tokens: 5 });
        expect(view.raw.find((m) => m.seq === 2)?.stubbed).toBeUndefined();
      });
    });
    describe('redactRetiredSpans', () => {
      it('never touches active spans when redacting retired ones', async () => {
        await appendMany(store, key, 8);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 5 });
        await store.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 6, text: 'S2', tokens: 5 });
        const before = await store.loadContext(key);
        // S1 (1..4) was retired by S2; it holds seq 2, once.
        expect(await store.redactRetiredSpans(key, [{ fromSeq: 2, toSeq: 2 }])).toBe(1);
        expect(await store.redactRetiredSpans(key, [{ fromSeq: 2, toSeq: 2 }])).toBe(0);
        expect(await store.redactRetiredSpans(key, [])).toBe(0);
        expect(await store.loadContext(key)).toEqual(before);
      });

      it('blanks the retired spans that overlap the ranges, and only those', async () => {
        await appendMany(store, key, 12);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1 holds 7431', tokens: 3 });
        await store.splice(key, { jobId: 'j2', fromSeq: 5, toSeq: 8, text: 'S2 other', tokens: 3 });
        await store.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 10, text: 'S3 holds 7431', tokens: 3 });
        expect(await store.redactRetiredSpans(key, [{ fromSeq: 3, toSeq: 3 }])).toBe(1);
        // A blanked span no longer serves as an earlier summary; the one beside it still does.
        expect(await store.summaryBefore(key, 1, 9)).toBeUndefined();
        expect(await store.summaryBefore(key, 5, 9)).toEqual({ fromSeq: 5, toSeq: 8, text: 'S2 other' });
        expect((await store.loadPrefix(key)).spans.map((s) => (s.kind === 'summary' ? s.text : ''))).toEqual([
          'S3 holds 7431',
        ]);
        expect(await store.redactRetiredSpans(`${key}:other`, [{ fromSeq: 1, toSeq: 12 }])).toBe(0);
      });
    });
    describe('replaceSummary', () => {
      it('replaces a summary span over the same range, bumping the generation and the span tokens', async () => {
        await appendMany(store, key, 10);
        await store.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 4,
          text: 'S1 the secret',
          tokens: 7,
        });
        await store.splice(key, { jobId: 'j2', fromSeq: 5, toSeq: 6, text: 'S2', tokens: 3 });
        const replacement = { fromSeq: 1, toSeq: 4, text: 'S1 redacted', tokens: 4, jobId: 'forget-1' };
        expect(await store.replaceSummary(key, { ...replacement, replaces: 'other' })).toEqual({
          kind: 'missing',
        });
        expect(await store.replaceSummary(key, { ...replacement, toSeq: 5, replaces: 'j1' })).toEqual({
          kind: 'missing',
        });
        expect(await store.replaceSummary(`${key}:none`, { ...replacement, replaces: 'j1' })).toEqual({
          kind: 'missing',
        });
        expect(await store.generation(key)).toBe(2);

        const outcome = await store.replaceSummary(key, { ...replacement, replaces: 'j1' });
        expect(outcome).toEqual({ kind: 'replaced', generation: 3, tokensBefore: 50, tokensAfter: 47 });
        const view = await expectIntact(store, key);
        expect(view.spans).toEqual([
          {
            kind: 'summary',
            fromSeq: 1,
            toSeq: 4,
            text: 'S1 redacted',
            tokens: 4,
            createdGeneration: 3,
            jobId: 'forget-1',
          },
          { kind: 'summary', fromSeq: 5, toSeq: 6, text: 'S2', tokens: 3, createdGeneration: 2, jobId: 'j2' },
        ]);
        // Once replaced, the old job's span is gone: a second try finds nothing to replace.
        expect(await store.replaceSummary(key, { ...replacement, replaces: 'j1' })).toEqual({
          kind: 'missing',
        });
        // Passes go on as before: a wider one folds the replaced span.
        expect(
          (await store.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 8, text: 'W', tokens: 5 })).kind,
        ).toBe('splice');
        await expectIntact(store, key);
      });
    });
    describe('summaryBefore', () => {
      it('finds the longest whole retired summary before some seqs, to write a span again from', async () => {
        await appendMany(store, key, 12);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 5 });
        await store.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 7, text: 'S2', tokens: 5 });
        await store.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 10, text: 'S3', tokens: 5 });
        // S1 (1..4) and S2 (1..7) are retired; S3 is active.
        expect(await store.summaryBefore(key, 1, 9)).toEqual({ fromSeq: 1, toSeq: 7, text: 'S2' });
        expect(await store.summaryBefore(key, 1, 7)).toEqual({ fromSeq: 1, toSeq: 4, text: 'S1' });
        expect(await store.summaryBefore(key, 1, 4)).toBeUndefined();
        expect(await store.summaryBefore(key, 2, 9)).toBeUndefined();
        // Blanked by forgetting seq 6: S2 no longer serves; S1 does.
        await store.redactRetiredSpans(key, [{ fromSeq: 6, toSeq: 6 }]);
        expect(await store.summaryBefore(key, 1, 9)).toEqual({ fromSeq: 1, toSeq: 4, text: 'S1' });
        expect(await store.summaryBefore(`${key}:other`, 1, 9)).toBeUndefined();
      });
    });
  });
}
