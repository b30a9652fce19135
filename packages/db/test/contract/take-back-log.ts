/**
 * The store contract of the `TakeBackLog`: a take-back is recorded with its tombstones (or its edit)
 * and moves the channel's mark; a splice from a snapshot older than a take-back over its range is
 * refused; pending take-backs are claimed by one process at a time, for a lease, and finished once.
 */
import type {
  ContextWriter,
  Forgetting,
  NewTakeBack,
  PlatformChanges,
  TakeBackLog,
  TurnLog,
} from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, tombstoneOf } from './support.js';

/** The log, and the channel store that records into it and splices against it. */
export interface TakeBackLogUnderTest {
  readonly channels: Pick<Forgetting, 'redactArchive'> &
    Pick<PlatformChanges, 'editMessage'> &
    Pick<TurnLog, 'append'> &
    Pick<ContextWriter, 'splice'>;
  readonly log: TakeBackLog;
}

const tombstone = tombstoneOf;
const deleted = (fromSeq: number, toSeq: number, ids: string[] = []): NewTakeBack => ({
  kind: 'deleted',
  ranges: [{ fromSeq, toSeq }],
  platformMessageIds: ids,
});

export function takeBackLogContract(current: () => ContractContext<TakeBackLogUnderTest>): void {
  describe('TakeBackLog', () => {
    let channels: TakeBackLogUnderTest['channels'];
    let log: TakeBackLog;
    let key: string;
    beforeEach(() => {
      const context = current();
      ({ channels, log } = context.store);
      key = context.key;
    });

    it('records a take-back with the tombstones, moving the mark, and none when the archive held nothing', async () => {
      await appendMany(channels, key, 6);
      expect(await log.takeBackMark(key)).toBe(0);
      const outcome = await channels.redactArchive(key, [tombstone(3)], deleted(3, 3, ['p3']));
      expect(outcome.takeBack).toMatchObject({
        channelKey: key,
        mark: 1,
        kind: 'deleted',
        ranges: [{ fromSeq: 3, toSeq: 3 }],
        platformMessageIds: ['p3'],
        status: 'pending',
      });
      expect(await log.takeBackMark(key)).toBe(1);
      const none = await channels.redactArchive(key, [tombstone(99)], deleted(99, 99));
      expect(none.takeBack).toBeUndefined();
      expect(await log.takeBackMark(key)).toBe(1);
      const edited = await channels.editMessage(key, {
        seq: 5,
        text: 'new',
        tokens: 1,
        contextTokens: 1,
        takeBack: { kind: 'edited', ranges: [{ fromSeq: 5, toSeq: 5 }], platformMessageIds: ['p5'] },
      });
      expect(edited).toMatchObject({ kind: 'edited', takeBack: { mark: 2, kind: 'edited' } });
      expect((await log.pendingTakeBacks(key)).map((t) => t.mark)).toEqual([1, 2]);
    });

    it('answers the take-backs since a mark over a range, by their ranges, not their bounds', async () => {
      await appendMany(channels, key, 100);
      await channels.redactArchive(key, [tombstone(3), tombstone(90)], {
        kind: 'deleted',
        ranges: [
          { fromSeq: 3, toSeq: 3 },
          { fromSeq: 90, toSeq: 90 },
        ],
        platformMessageIds: [],
      });
      await channels.redactArchive(key, [tombstone(15)], deleted(15, 15));
      const marks = async (mark: number, fromSeq: number, toSeq: number) =>
        (await log.takenBackSince(key, mark, { fromSeq, toSeq })).map((t) => t.mark);
      expect(await marks(0, 10, 20)).toEqual([2]);
      expect(await marks(0, 1, 100)).toEqual([1, 2]);
      expect(await marks(1, 1, 100)).toEqual([2]);
      expect(await marks(2, 1, 100)).toEqual([]);
      expect(await marks(0, 40, 80)).toEqual([]);
      expect(await log.takenBackSince(`${key}:other`, 0, { fromSeq: 1, toSeq: 100 })).toEqual([]);
    });

    it('refuses a splice read before a take-back over its range, and not one read after or elsewhere', async () => {
      await appendMany(channels, key, 12);
      const mark = await log.takeBackMark(key);
      await channels.redactArchive(key, [tombstone(2)], deleted(2, 2));
      const summary = { text: 'S', tokens: 5 };
      expect(
        await channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, ...summary, takeBackMark: mark }),
      ).toEqual({
        kind: 'stale',
        reason: 'taken_back',
      });
      expect(
        await channels.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 4, ...summary, takeBackMark: mark + 1 }),
      ).toMatchObject({ kind: 'splice' });
      // A take-back after seq 4 does not touch a pass over 5..8 read before it.
      const before = await log.takeBackMark(key);
      await channels.redactArchive(key, [tombstone(11)], deleted(11, 11));
      expect(
        await channels.splice(key, { jobId: 'j3', fromSeq: 5, toSeq: 8, ...summary, takeBackMark: before }),
      ).toMatchObject({ kind: 'splice' });
    });

    it('claims a pending take-back once per lease, releases it on an error and finishes it once', async () => {
      await appendMany(channels, key, 4);
      const recorded = (await channels.redactArchive(key, [tombstone(1)], deleted(1, 1))).takeBack;
      if (!recorded) throw new Error('no take-back recorded');
      const mine = (t: { channelKey: string }) => t.channelKey === key;
      const first = (await log.claimTakeBacks({ limit: 100, leaseMs: 60_000 })).filter(mine);
      expect(first.map((t) => t.id)).toEqual([recorded.id]);
      expect(first[0]?.attempts).toBe(1);
      // Held: nobody else gets it, by id either.
      expect((await log.claimTakeBacks({ limit: 100, leaseMs: 60_000 })).filter(mine)).toEqual([]);
      expect(await log.claimTakeBacks({ limit: 1, leaseMs: 60_000, id: recorded.id })).toEqual([]);
      // A renewed claim still holds.
      await log.renewTakeBack(recorded.id, 60_000);
      expect(await log.claimTakeBacks({ limit: 1, leaseMs: 60_000, id: recorded.id })).toEqual([]);
      await log.finishTakeBack(recorded.id, { error: 'store_unavailable' });
      const again = await log.claimTakeBacks({ limit: 1, leaseMs: 60_000, id: recorded.id });
      expect(again.map((t) => [t.id, t.attempts])).toEqual([[recorded.id, 2]]);
      await log.finishTakeBack(recorded.id, { counts: { memories: 1, checkpoints: 0, summaries: 2 } });
      expect(await log.pendingTakeBacks(key)).toEqual([]);
      await log.finishTakeBack(recorded.id, { error: 'late' });
      expect(await log.pendingTakeBacks(key)).toEqual([]);
      // A lease that ran out is claimable again.
      await channels.redactArchive(key, [tombstone(2)], deleted(2, 2));
      const [lapsed] = (await log.claimTakeBacks({ limit: 100, leaseMs: 0 })).filter(mine);
      expect(lapsed?.mark).toBe(2);
      expect(
        (await log.claimTakeBacks({ limit: 100, leaseMs: 60_000 })).filter(mine).map((t) => t.mark),
      ).toEqual([2]);
    });

    it('counts the pending take-backs per channel with the oldest, until each is finished', async () => {
      const other = `${key}:b`;
      await appendMany(channels, key, 4);
      await appendMany(channels, other, 2);
      const first = (await channels.redactArchive(key, [tombstone(2)], deleted(2, 2, ['p2']))).takeBack;
      const edit = await channels.editMessage(key, {
        seq: 3,
        text: 'new',
        tokens: 1,
        contextTokens: 1,
        takeBack: { kind: 'edited', ranges: [{ fromSeq: 3, toSeq: 3 }], platformMessageIds: ['p3'] },
      });
      const second = edit.kind === 'edited' ? edit.takeBack : undefined;
      const forgot = await log.recordTakeBack(other, {
        kind: 'forget',
        ranges: [{ fromSeq: 1, toSeq: 2 }],
        platformMessageIds: [],
      });
      if (!first || !second) throw new Error('no take-back recorded');
      const mine = async (channelKey?: string) =>
        (await log.pendingTakeBackCounts(channelKey)).filter((p) => p.channelKey.startsWith(key));
      expect(await mine()).toEqual([
        { channelKey: key, pending: 2, oldest: { kind: 'deleted', createdAt: first.createdAt } },
        { channelKey: other, pending: 1, oldest: { kind: 'forget', createdAt: forgot.createdAt } },
      ]);
      expect(await mine(other)).toEqual([
        { channelKey: other, pending: 1, oldest: { kind: 'forget', createdAt: forgot.createdAt } },
      ]);
      // A failed attempt leaves it pending; a finished one is counted no more.
      await log.finishTakeBack(first.id, { error: 'store_unavailable' });
      expect((await mine(key))[0]?.pending).toBe(2);
      await log.finishTakeBack(first.id, { counts: { memories: 0, checkpoints: 0, summaries: 1 } });
      expect(await mine(key)).toEqual([
        { channelKey: key, pending: 1, oldest: { kind: 'edited', createdAt: second.createdAt } },
      ]);
      await log.finishTakeBack(second.id, { counts: { memories: 0, checkpoints: 0, summaries: 0 } });
      expect(await mine(key)).toEqual([]);
      expect((await mine()).map((p) => p.channelKey)).toEqual([other]);
    });

    it('tombstones a batch without a take-back when told (a sweep records one after its last batch)', async () => {
      await appendMany(channels, key, 3);
      const outcome = await channels.redactArchive(key, [tombstone(2)], undefined);
      expect(outcome).toMatchObject({ redacted: 1 });
      expect(outcome.takeBack).toBeUndefined();
      expect(await log.takeBackMark(key)).toBe(0);
    });

    it('records a take-back alone, for a forget that tombstones nothing', async () => {
      await appendMany(channels, key, 3);
      const recorded = await log.recordTakeBack(key, {
        kind: 'forget',
        ranges: [{ fromSeq: 2, toSeq: 3 }],
        platformMessageIds: [],
      });
      expect(recorded).toMatchObject({ mark: 1, kind: 'forget', status: 'pending' });
      expect(await log.takeBackMark(key)).toBe(1);
    });
  });
}
