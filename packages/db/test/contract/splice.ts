/** The store contract: splicing a finished summary into the prefix. */
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, type ContractStores, expectIntact } from './support.js';

export function spliceCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  describe('splice', () => {
    it('replaces the range with its summary, drops the raw messages and bumps the generation', async () => {
      await appendMany(stores.channels, key, 10);
      const outcome = await stores.channels.splice(key, {
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
      const view = await expectIntact(stores.channels, key);
      expect(view.spans).toEqual([
        { kind: 'summary', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 7, createdGeneration: 1, jobId: 'j1' },
      ]);
      expect(view.raw.map((m) => m.seq)).toEqual([5, 6, 7, 8, 9, 10]);
      expect(view.tokens).toBe(67);
      expect(await stores.channels.generation(key)).toBe(1);
      // The archive keeps everything, whole.
      expect(await stores.channels.readArchive(key, 1, 10)).toHaveLength(10);
    });

    it('folds an earlier summary into a wider one', async () => {
      await appendMany(stores.channels, key, 10);
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 7 });
      const outcome = await stores.channels.splice(key, {
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
      const view = await expectIntact(stores.channels, key);
      expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 8]]);
    });

    it('is a no-op the second time', async () => {
      await appendMany(stores.channels, key, 10);
      const result = { jobId: 'j1', fromSeq: 1, toSeq: 5, text: 'S', tokens: 5 };
      expect((await stores.channels.splice(key, result)).kind).toBe('splice');
      const before = await stores.channels.loadContext(key);
      expect(await stores.channels.splice(key, result)).toEqual({
        kind: 'noop',
        reason: 'already_applied',
      });
      expect(await stores.channels.loadContext(key)).toEqual(before);
      expect(await stores.channels.generation(key)).toBe(1);
    });

    it('is stale when a wider summary covers part of its range, or the range is past the head', async () => {
      await appendMany(stores.channels, key, 10);
      await stores.channels.splice(key, { jobId: 'wide', fromSeq: 1, toSeq: 8, text: 'W', tokens: 5 });
      const narrow = await stores.channels.splice(key, {
        jobId: 'narrow',
        fromSeq: 2,
        toSeq: 5,
        text: 'N',
        tokens: 3,
      });
      expect(narrow.kind).toBe('stale');
      const past = await stores.channels.splice(key, {
        jobId: 'past',
        fromSeq: 9,
        toSeq: 11,
        text: 'P',
        tokens: 3,
      });
      expect(past.kind).toBe('stale');
      expect(await stores.channels.generation(key)).toBe(1);
      await expectIntact(stores.channels, key);
    });

    it('applies concurrent deliveries of one result once', async () => {
      await appendMany(stores.channels, key, 10);
      const result = { jobId: 'j1', fromSeq: 1, toSeq: 5, text: 'S', tokens: 5 };
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, () => stores.channels.splice(key, result)),
      );
      expect(outcomes.filter((o) => o.kind === 'splice')).toHaveLength(1);
      expect(outcomes.filter((o) => o.kind === 'noop')).toHaveLength(5);
      const view = await expectIntact(stores.channels, key);
      expect(view.generation).toBe(1);
      expect(view.spans).toHaveLength(1);
    });

    it('serializes concurrent splices of overlapping ranges', async () => {
      await appendMany(stores.channels, key, 12);
      const ranges: [number, number][] = [
        [1, 4],
        [1, 8],
        [1, 6],
        [1, 10],
      ];
      const outcomes = await Promise.all(
        ranges.map(([from, to]) =>
          stores.channels.splice(key, {
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
      const view = await expectIntact(stores.channels, key);
      expect(view.generation).toBe(applied.length);
      expect(applied.map((o) => (o.kind === 'splice' ? o.generation : 0)).sort()).toEqual(
        applied.map((_, i) => i + 1),
      );
      expect(view.spans.every((s) => s.kind === 'summary')).toBe(true);
    });
  });
}
