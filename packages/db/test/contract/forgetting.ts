/** The store contract: what `ebb forget` needs of the channel store. */
import type { SummaryOutput } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, type ContractStores, expectIntact, message } from './support.js';

export function forgettingCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  describe('forgetting', () => {
    it('finds the seqs an author wrote, per channel', async () => {
      const other = `${key}:other`;
      await appendMany(stores.channels, key, 7);
      await appendMany(stores.channels, other, 2);
      const found = (await stores.channels.findAuthored('u1')).filter((a) => a.channelKey.startsWith(key));
      expect(found).toEqual([
        { channelKey: key, seqs: [1, 4, 7] },
        { channelKey: other, seqs: [1] },
      ]);
      expect(await stores.channels.findAuthored(`nobody-${key}`)).toEqual([]);
      // One channel only.
      expect(await stores.channels.findAuthored('u1', other)).toEqual([{ channelKey: other, seqs: [1] }]);
      expect(await stores.channels.findAuthored('U1', key)).toEqual([]);
    });

    it('finds the seqs whose text or tool call holds a string, ignoring case, whoever wrote them', async () => {
      const other = `${key}:other`;
      await appendMany(stores.channels, key, 3);
      await stores.channels.append(
        key,
        message(4, { role: 'assistant', author: 'ebb', text: 'the code is 7431-Zebra' }),
      );
      await stores.channels.append(
        key,
        message(5, {
          role: 'assistant',
          author: 'ebb',
          text: '',
          toolCalls: [{ id: 'c1', name: 'vault', arguments: '{"code":"7431-ZEBRA"}' }],
        }),
      );
      await stores.channels.append(other, message(1, { text: 'VAULT 7431-zebra, 100% _sure_' }));
      const found = (await stores.channels.findContaining('7431-zebra')).filter((a) =>
        a.channelKey.startsWith(key),
      );
      expect(found).toEqual([
        { channelKey: key, seqs: [4, 5] },
        { channelKey: other, seqs: [1] },
      ]);
      // LIKE wildcards in the text are plain characters.
      expect((await stores.channels.findContaining('100%')).filter((a) => a.channelKey === other)).toEqual([
        { channelKey: other, seqs: [1] },
      ]);
      expect((await stores.channels.findContaining('_s')).filter((a) => a.channelKey === other)).toEqual([
        { channelKey: other, seqs: [1] },
      ]);
      expect(
        (await stores.channels.findContaining('%%')).filter((a) => a.channelKey.startsWith(key)),
      ).toEqual([]);
      // A tool call is searched in its name and arguments, never in its JSON keys or id.
      for (const notText of ['arguments', 'c1', '"name"']) {
        expect(
          (await stores.channels.findContaining(notText)).filter((a) => a.channelKey === key),
          notText,
        ).toEqual([]);
      }
    });

    it('replaces a summary span over the same range, bumping the generation and the span tokens', async () => {
      await appendMany(stores.channels, key, 10);
      await stores.channels.splice(key, {
        jobId: 'j1',
        fromSeq: 1,
        toSeq: 4,
        text: 'S1 the secret',
        tokens: 7,
      });
      await stores.channels.splice(key, { jobId: 'j2', fromSeq: 5, toSeq: 6, text: 'S2', tokens: 3 });
      const replacement = { fromSeq: 1, toSeq: 4, text: 'S1 redacted', tokens: 4, jobId: 'forget-1' };
      expect(await stores.channels.replaceSummary(key, { ...replacement, replaces: 'other' })).toEqual({
        kind: 'missing',
      });
      expect(await stores.channels.replaceSummary(key, { ...replacement, toSeq: 5, replaces: 'j1' })).toEqual(
        {
          kind: 'missing',
        },
      );
      expect(await stores.channels.replaceSummary(`${key}:none`, { ...replacement, replaces: 'j1' })).toEqual(
        {
          kind: 'missing',
        },
      );
      expect(await stores.channels.generation(key)).toBe(2);

      const outcome = await stores.channels.replaceSummary(key, { ...replacement, replaces: 'j1' });
      expect(outcome).toEqual({ kind: 'replaced', generation: 3, tokensBefore: 50, tokensAfter: 47 });
      const view = await expectIntact(stores.channels, key);
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
      expect(await stores.channels.replaceSummary(key, { ...replacement, replaces: 'j1' })).toEqual({
        kind: 'missing',
      });
      // Passes go on as before: a wider one folds the replaced span.
      expect(
        (await stores.channels.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 8, text: 'W', tokens: 5 })).kind,
      ).toBe('splice');
      await expectIntact(stores.channels, key);
    });

    it('overwrites archived messages with tombstones; raw ones change the context and its tokens', async () => {
      await appendMany(stores.channels, key, 8);
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
      const tombstone = (seq: number) => ({
        seq,
        role: 'user' as const,
        author: `u${seq % 3}`,
        text: '[gone]',
        tokens: 3,
      });
      const outcome = await stores.channels.redactArchive(key, [tombstone(2), tombstone(6), tombstone(99)]);
      expect(outcome).toEqual({ redacted: 2, raw: 1, generation: 2 });
      const view = await expectIntact(stores.channels, key);
      expect(view.tokens).toBe(5 + 10 + 3 + 10 + 10);
      expect(view.raw.map((m) => m.text)).toEqual(['message 5', '[gone]', 'message 7', 'message 8']);
      expect((await stores.channels.readArchive(key, 1, 8)).map((m) => m.text)).toEqual([
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
      expect(await stores.channels.redactArchive(key, [tombstone(3)])).toEqual({
        redacted: 1,
        raw: 0,
        generation: 2,
      });
      // A message delivered again after it was redacted is still a duplicate, not a new message.
      const again = await stores.channels.append(key, message(2, { platformMessageId: 'p2' }));
      expect(again).toMatchObject({ seq: 2, inserted: false });
    });

    it('finds the seqs of platform ids, in seq order, leaving out ids it never held', async () => {
      await appendMany(stores.channels, key, 5);
      expect(await stores.channels.findByPlatformIds(key, ['p4', 'nope', 'p2', 'p4'])).toEqual([
        { platformMessageId: 'p2', seq: 2 },
        { platformMessageId: 'p4', seq: 4 },
      ]);
      expect(await stores.channels.findByPlatformIds(`${key}:other`, ['p2'])).toEqual([]);
      expect(await stores.channels.findByPlatformIds(key, [])).toEqual([]);
    });

    it('edits a message: the archive keeps only the new text, a raw copy changes in place', async () => {
      await appendMany(stores.channels, key, 6);
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 3, text: 'S1', tokens: 5 });
      // Raw (seq 5): a clipped copy, the totals moved by the difference, the generation bumped.
      const raw = await stores.channels.editMessage(key, {
        seq: 5,
        text: 'the new, much longer text',
        tokens: 40,
        contextTokens: 20,
        contextText: 'the new, [clipped] text',
        omittedTokens: 20,
      });
      expect(raw).toEqual({ kind: 'edited', raw: true, generation: 2, tokensBefore: 35, tokensAfter: 45 });
      const view = await expectIntact(stores.channels, key);
      expect(view.raw.find((m) => m.seq === 5)).toMatchObject({
        text: 'the new, [clipped] text',
        tokens: 20,
        omittedTokens: 20,
      });
      expect((await stores.channels.readArchive(key, 5, 5))[0]).toMatchObject({
        text: 'the new, much longer text',
        tokens: 40,
        author: 'u2',
        role: 'user',
      });
      // Back to a short text: no clipped copy is left.
      await stores.channels.editMessage(key, { seq: 5, text: 'short', tokens: 4, contextTokens: 4 });
      const again = await expectIntact(stores.channels, key);
      expect(again.raw.find((m) => m.seq === 5)).toEqual(
        expect.objectContaining({ text: 'short', tokens: 4 }),
      );
      expect(again.raw.find((m) => m.seq === 5)?.omittedTokens).toBeUndefined();
      // In the compacted prefix: the archive only; the context and its generation stay.
      const before = await stores.channels.loadContext(key);
      expect(
        await stores.channels.editMessage(key, { seq: 2, text: 'edited', tokens: 6, contextTokens: 6 }),
      ).toEqual({
        kind: 'edited',
        raw: false,
        generation: before.generation,
        tokensBefore: before.tokens,
        tokensAfter: before.tokens,
      });
      expect(await stores.channels.loadContext(key)).toEqual(before);
      expect((await stores.channels.readArchive(key, 2, 2))[0]?.text).toBe('edited');
      expect(
        await stores.channels.editMessage(key, { seq: 99, text: 'x', tokens: 1, contextTokens: 1 }),
      ).toEqual({
        kind: 'missing',
      });
      // The platform id still names it: a redelivery is a duplicate.
      expect(await stores.channels.append(key, message(5, { platformMessageId: 'p5' }))).toMatchObject({
        seq: 5,
        inserted: false,
      });
    });

    it('finds the longest whole retired summary before some seqs, to write a span again from', async () => {
      await appendMany(stores.channels, key, 12);
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 5 });
      await stores.channels.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 7, text: 'S2', tokens: 5 });
      await stores.channels.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 10, text: 'S3', tokens: 5 });
      // S1 (1..4) and S2 (1..7) are retired; S3 is active.
      expect(await stores.channels.summaryBefore(key, 1, 9)).toEqual({ fromSeq: 1, toSeq: 7, text: 'S2' });
      expect(await stores.channels.summaryBefore(key, 1, 7)).toEqual({ fromSeq: 1, toSeq: 4, text: 'S1' });
      expect(await stores.channels.summaryBefore(key, 1, 4)).toBeUndefined();
      expect(await stores.channels.summaryBefore(key, 2, 9)).toBeUndefined();
      // Blanked by forgetting seq 6: S2 no longer serves; S1 does.
      await stores.channels.redactRetiredSpans(key, [{ fromSeq: 6, toSeq: 6 }]);
      expect(await stores.channels.summaryBefore(key, 1, 9)).toEqual({ fromSeq: 1, toSeq: 4, text: 'S1' });
      expect(await stores.channels.summaryBefore(`${key}:other`, 1, 9)).toBeUndefined();
    });

    it('never touches active spans when redacting retired ones', async () => {
      await appendMany(stores.channels, key, 8);
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 5 });
      await stores.channels.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 6, text: 'S2', tokens: 5 });
      const before = await stores.channels.loadContext(key);
      // S1 (1..4) was retired by S2; it holds seq 2, once.
      expect(await stores.channels.redactRetiredSpans(key, [{ fromSeq: 2, toSeq: 2 }])).toBe(1);
      expect(await stores.channels.redactRetiredSpans(key, [{ fromSeq: 2, toSeq: 2 }])).toBe(0);
      expect(await stores.channels.redactRetiredSpans(key, [])).toBe(0);
      expect(await stores.channels.loadContext(key)).toEqual(before);
    });

    it('clears checkpoints over the redacted seqs and drops forgotten memories from the others', async () => {
      const output = (text: string, memoryTexts: string[]): SummaryOutput => ({
        text,
        memories: memoryTexts.map((t) => ({
          type: 'fact',
          text: t,
          importance: 0.5,
          fromSeq: 1,
          toSeq: 2,
        })),
        fallback: false,
        model: 'm',
        calls: [],
      });
      const run = async (
        jobId: string,
        channelKey: string,
        fromSeq: number,
        toSeq: number,
        out?: SummaryOutput,
      ) => {
        await stores.runs.create({
          jobId,
          channelKey,
          tier: 'background',
          usage: 0.8,
          fromSeq,
          toSeq,
          generation: 0,
        });
        if (out) await stores.runs.saveOutput(jobId, out);
      };
      const other = `${key}:other`;
      await run(
        `${key}:a`,
        key,
        1,
        10,
        output('vault code 7431', ['The vault code is 7431', 'Ana likes tea']),
      );
      await run(`${key}:b`, key, 11, 20, output('later', ['Ana likes tea']));
      await run(`${key}:c`, other, 1, 10, output('elsewhere', ['The vault code is 7431', 'Bo owns CI']));
      await run(`${key}:d`, key, 5, 6);
      const forget = async () =>
        (await stores.runs.clearCheckpoints(key, [{ fromSeq: 4, toSeq: 4 }])) +
        (await stores.runs.dropCheckpointMemories(['The vault code is 7431']));
      const changed = await forget();
      expect(changed).toBe(2);
      expect((await stores.runs.get(`${key}:a`))?.output).toBeUndefined();
      expect((await stores.runs.get(`${key}:a`))?.status).toBe('queued');
      expect((await stores.runs.get(`${key}:b`))?.output).toEqual(output('later', ['Ana likes tea']));
      expect((await stores.runs.get(`${key}:c`))?.output).toEqual(output('elsewhere', ['Bo owns CI']));
      expect((await stores.runs.get(`${key}:d`))?.output).toBeUndefined();
      // Nothing left to change.
      expect(await forget()).toBe(0);
    });
  });
}
