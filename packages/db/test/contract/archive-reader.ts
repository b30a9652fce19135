/**
 * The store contract of the `ArchiveReader`: whole archived messages by range, their authors, the
 * threads under a channel holding platform ids, and the compacted prefix without the raw messages.
 */
import type { ArchiveReader, ContextWriter, TurnLog } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, message } from './support.js';

/** The archive reader, and what its cases fill a channel and compact its context with. */
export type ArchiveReaderUnderTest = ArchiveReader &
  Pick<TurnLog, 'append'> &
  Pick<ContextWriter, 'splice' | 'truncate'>;

export function archiveReaderContract(current: () => ContractContext<ArchiveReaderUnderTest>): void {
  describe('ArchiveReader', () => {
    let store: ArchiveReaderUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    describe('readArchive', () => {
      it('reads fromSeq..toSeq, both included, in order, within what the channel holds', async () => {
        await appendMany(store, key, 5);
        const seqs = async (fromSeq: number, toSeq: number, channelKey = key) =>
          (await store.readArchive(channelKey, fromSeq, toSeq)).map((m) => m.seq);
        expect(await seqs(2, 4)).toEqual([2, 3, 4]);
        expect(await seqs(3, 3)).toEqual([3]);
        expect(await seqs(0, 2)).toEqual([1, 2]);
        expect(await seqs(4, 99)).toEqual([4, 5]);
        expect(await seqs(6, 9)).toEqual([]);
        expect(await seqs(4, 3)).toEqual([]);
        expect(await seqs(1, 5, `${key}:none`)).toEqual([]);
        expect(await store.readArchive(key, 1, 1)).toEqual([
          { seq: 1, role: 'user', author: 'u1', text: 'message 1', tokens: 10 },
        ]);
      });

      it('reads the messages a truncation and a splice took out of the context, whole', async () => {
        await appendMany(store, key, 20);
        await store.truncate(key, { fraction: 0.5, protectRecent: 4, markerTokens: 30 });
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 12, text: 'S', tokens: 9 });
        const archive = await store.readArchive(key, 1, 20);
        expect(archive.map((m) => [m.seq, m.text, m.tokens])).toEqual(
          Array.from({ length: 20 }, (_, i) => [i + 1, `message ${i + 1}`, 10]),
        );
      });
    });
    describe('readAuthors', () => {
      it('lists the distinct authors of a range, sorted, also where a summary covers it', async () => {
        await appendMany(store, key, 6);
        await store.append(key, message(7, { author: 'Zoë' }));
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
        expect(await store.readAuthors(key, 1, 7)).toEqual(['Zoë', 'u0', 'u1', 'u2']);
        expect(await store.readAuthors(key, 2, 3)).toEqual(['u0', 'u2']);
        expect(await store.readAuthors(key, 8, 9)).toEqual([]);
        expect(await store.readAuthors(`${key}:none`, 1, 9)).toEqual([]);
      });
    });
    it('finds the replies whose prompt recalled a memory, and nothing for none or an unknown id', async () => {
      await store.append(key, message(1));
      await store.append(key, message(2, { role: 'assistant', recalledMemories: ['7', '12'] }));
      await store.append(key, message(3));
      await store.append(key, message(4, { role: 'assistant', recalledMemories: ['12'] }));
      await store.append(key, message(5, { role: 'assistant', recalledMemories: [] }));
      await store.append(`${key}:other`, message(1, { role: 'assistant', recalledMemories: ['7'] }));
      expect(await store.findRecalling(key, ['7'])).toEqual([2]);
      expect(await store.findRecalling(key, ['12', '7'])).toEqual([2, 4]);
      expect(await store.findRecalling(key, ['99'])).toEqual([]);
      expect(await store.findRecalling(key, [])).toEqual([]);
    });

    it('pages the archive by seq with each message time (its platform time, else when archived), no text', async () => {
      const before = Date.now();
      await store.append(key, message(1, { ts: '2025-01-01T00:00:00.000Z' }));
      await store.append(key, message(2, { ts: '2025-03-01T12:30:00+01:00' }));
      await store.append(key, message(3, { ts: '1700000000.000100' }));
      await store.append(key, message(4));
      await store.append(key, message(5, { ts: '2004-12-25T09:14' }));
      const page = await store.archiveTimes(key, 0, 10);
      expect(page.map((p) => [p.seq, p.taken])).toEqual([
        [1, false],
        [2, false],
        [3, false],
        [4, false],
        [5, false],
      ]);
      expect(page[0]?.at).toBe(Date.parse('2025-01-01T00:00:00.000Z'));
      expect(page[1]?.at).toBe(Date.parse('2025-03-01T11:30:00.000Z'));
      // A transcript's zone-less time is UTC.
      expect(page[4]?.at).toBe(Date.parse('2004-12-25T09:14:00Z'));
      // A ts that is no ISO time (a Slack ts) and none at all: when it was archived.
      for (const p of page.slice(2, 4)) expect(Math.abs((p.at ?? 0) - before)).toBeLessThan(60_000);
      expect((await store.archiveTimes(key, 2, 1)).map((p) => p.seq)).toEqual([3]);
      expect(await store.archiveTimes(`${key}:none`, 0, 10)).toEqual([]);
    });

    describe('findInThreads', () => {
      it("finds the threads under a channel holding the ids, on the key's separator, never the channel itself", async () => {
        // The channel, two of its threads, and a channel whose key its own prefixes (C1 and C12) with a thread.
        const a = `${key}:1700000000.000100`;
        const b = `${key}:1700000000.000200`;
        const longer = `${key}2`;
        const longerThread = `${longer}:1700000000.000100`;
        const put = (channelKey: string, platformMessageId: string) =>
          store.append(channelKey, message(1, { platformMessageId }));
        await put(key, 'p-top');
        await put(b, 'p-b');
        await put(a, 'p-shared');
        await put(a, 'p-a');
        await put(longer, 'p-longer');
        await put(longerThread, 'p-shared');
        await put(longerThread, 'p-other');

        const asked = ['p-b', 'p-shared', 'p-a', 'p-top', 'p-longer', 'p-other', 'nowhere', 'p-a'];
        expect(await store.findInThreads(key, asked)).toEqual([
          { channelKey: a, platformMessageId: 'p-a' },
          { channelKey: a, platformMessageId: 'p-shared' },
          { channelKey: b, platformMessageId: 'p-b' },
        ]);
        expect(await store.findInThreads(longer, asked)).toEqual([
          { channelKey: longerThread, platformMessageId: 'p-other' },
          { channelKey: longerThread, platformMessageId: 'p-shared' },
        ]);
        // A thread has no threads; nothing asked, nothing found; a channel never seen holds none.
        expect(await store.findInThreads(a, asked)).toEqual([]);
        expect(await store.findInThreads(key, [])).toEqual([]);
        expect(await store.findInThreads(`${key}:none`, asked)).toEqual([]);
      });
    });
    describe('loadPrefix', () => {
      it('is empty for a channel never seen, and only the head until something is compacted', async () => {
        expect(await store.loadPrefix(key)).toEqual({ generation: 0, headSeq: 0, spans: [] });
        await store.append(key, message(1));
        expect(await store.loadPrefix(key)).toEqual({ generation: 0, headSeq: 1, spans: [] });
      });

      it('holds the active spans, the head and the generation after a truncation and splices', async () => {
        await appendMany(store, key, 20);
        await store.truncate(key, { fraction: 0.5, protectRecent: 4, markerTokens: 30 });
        expect(await store.loadPrefix(key)).toEqual({
          generation: 1,
          headSeq: 20,
          spans: [{ kind: 'truncated', fromSeq: 1, toSeq: 10, tokens: 30, createdGeneration: 1 }],
        });
        // A pass over the marker heals it; a message arrives after.
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 12, text: 'S1', tokens: 9 });
        await store.append(key, message(21));
        const s1 = { kind: 'summary', fromSeq: 1, toSeq: 12, text: 'S1', tokens: 9, createdGeneration: 2 };
        expect(await store.loadPrefix(key)).toEqual({
          generation: 2,
          headSeq: 21,
          spans: [{ ...s1, jobId: 'j1' }],
        });
        // A summary beside it, then a wider one that folds both: only the active span is in the prefix.
        await store.splice(key, { jobId: 'j2', fromSeq: 13, toSeq: 15, text: 'S2', tokens: 4 });
        expect((await store.loadPrefix(key)).spans.map((s) => [s.fromSeq, s.toSeq])).toEqual([
          [1, 12],
          [13, 15],
        ]);
        await store.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 18, text: 'S3', tokens: 11 });
        expect(await store.loadPrefix(key)).toEqual({
          generation: 4,
          headSeq: 21,
          spans: [
            {
              kind: 'summary',
              fromSeq: 1,
              toSeq: 18,
              text: 'S3',
              tokens: 11,
              createdGeneration: 4,
              jobId: 'j3',
            },
          ],
        });
      });
    });
  });
}
