/** The store contract of the `ChannelDirectory`: every channel's counters, for operators. */
import type { ChannelDirectory, ContextWriter, TurnLog } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, stubOf, toolTurns } from './support.js';

/** The channel directory, and what its cases fill, calibrate and compact channels with. */
export type ChannelDirectoryUnderTest = ChannelDirectory &
  Pick<TurnLog, 'append' | 'loadContext' | 'setCalibration'> &
  Pick<ContextWriter, 'splice' | 'stubToolResults'>;

export function channelDirectoryContract(current: () => ContractContext<ChannelDirectoryUnderTest>): void {
  describe('ChannelDirectory', () => {
    let store: ChannelDirectoryUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    describe('listChannels', () => {
      it('lists every channel by key with its head, generation and context tokens', async () => {
        // Other tests may share the store: look only at this test's keys.
        const ours = async () => (await store.listChannels()).filter((c) => c.key.startsWith(key));
        const none = { stubbed: 0, tokensSaved: 0 };
        expect(await ours()).toEqual([]);
        await appendMany(store, `${key}:b`, 10);
        await store.splice(`${key}:b`, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 4,
          text: 'S1',
          tokens: 7,
        });
        const started = Date.now();
        await appendMany(store, `${key}:a`, 2);
        const listed = await ours();
        const calibration = { factor: 1, samples: 0 };
        expect(listed.map(({ lastActiveAt: _, ...c }) => c)).toEqual([
          { key: `${key}:a`, headSeq: 2, generation: 0, tokens: 20, microcompaction: none, calibration },
          { key: `${key}:b`, headSeq: 10, generation: 1, tokens: 67, microcompaction: none, calibration },
        ]);
        // Where a store keeps it (Postgres' updated_at; the database's clock may differ by a little).
        for (const c of listed)
          if (c.lastActiveAt !== undefined) expect(Math.abs(c.lastActiveAt - started)).toBeLessThan(60_000);
      });
    });
    describe('channelSummary', () => {
      it('gives one channel as the list gives it, and nothing for a channel it does not hold', async () => {
        await appendMany(store, `${key}:a`, 3);
        await appendMany(store, `${key}:b`, 5);
        await store.setCalibration(`${key}:b`, { factor: 1.5, samples: 2 });
        const listed = (await store.listChannels()).filter((c) => c.key.startsWith(key));
        expect(listed.map((c) => c.key)).toEqual([`${key}:a`, `${key}:b`]);
        for (const c of listed) expect(await store.channelSummary(c.key)).toEqual(c);
        expect(await store.channelSummary(`${key}:b`)).toMatchObject({
          headSeq: 5,
          calibration: { factor: 1.5, samples: 2 },
        });
        expect(await store.channelSummary(`${key}:none`)).toBeUndefined();
        // A key that is a prefix of held ones is not one of them.
        expect(await store.channelSummary(key)).toBeUndefined();
      });

      it('counts the tool results microcompaction stubbed and the tokens that saved, as the list does', async () => {
        await toolTurns(store, key);
        const before = await store.loadContext(key);
        await store.stubToolResults(key, {
          expectedGeneration: before.generation,
          stubs: [stubOf(before.raw, 2), stubOf(before.raw, 4)],
        });
        const summary = await store.channelSummary(key);
        expect(summary).toMatchObject({
          key,
          headSeq: 7,
          generation: before.generation + 1,
          tokens: before.tokens - 2 * (200 - 12),
          microcompaction: { stubbed: 2, tokensSaved: 2 * (200 - 12) },
        });
        expect((await store.listChannels()).filter((c) => c.key === key)).toEqual([summary]);
      });
    });
  });
}
