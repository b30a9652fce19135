/**
 * The store contract of the `CheckpointEraser`: forgetting and the platforms' deletions and edits take
 * what was taken back out of the runs' checkpoints, so a retried run never writes it again.
 */
import type { CheckpointEraser, RunStore, SummaryOutput } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ContractContext } from './support.js';

/** The checkpoint eraser, and the run store it records runs and checkpoints through and reads them back. */
export type CheckpointEraserUnderTest = CheckpointEraser & Pick<RunStore, 'create' | 'saveOutput' | 'get'>;

export function checkpointEraserContract(current: () => ContractContext<CheckpointEraserUnderTest>): void {
  describe('CheckpointEraser', () => {
    let store: CheckpointEraserUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    it('clears checkpoints over the redacted seqs and drops forgotten memories from the others', async () => {
      const outputOf = (text: string, memoryTexts: string[]): SummaryOutput => ({
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
        await store.create({
          jobId,
          channelKey,
          tier: 'background',
          usage: 0.8,
          fromSeq,
          toSeq,
          generation: 0,
        });
        if (out) await store.saveOutput(jobId, out);
      };
      const other = `${key}:other`;
      await run(
        `${key}:a`,
        key,
        1,
        10,
        outputOf('vault code 7431', ['The vault code is 7431', 'Ana likes tea']),
      );
      await run(`${key}:b`, key, 11, 20, outputOf('later', ['Ana likes tea']));
      await run(`${key}:c`, other, 1, 10, outputOf('elsewhere', ['The vault code is 7431', 'Bo owns CI']));
      await run(`${key}:d`, key, 5, 6);
      const forget = async () =>
        (await store.clearCheckpoints(key, [{ fromSeq: 4, toSeq: 4 }])) +
        (await store.dropCheckpointMemories(['The vault code is 7431']));
      const changed = await forget();
      expect(changed).toBe(2);
      expect((await store.get(`${key}:a`))?.output).toBeUndefined();
      expect((await store.get(`${key}:a`))?.status).toBe('queued');
      expect((await store.get(`${key}:b`))?.output).toEqual(outputOf('later', ['Ana likes tea']));
      expect((await store.get(`${key}:c`))?.output).toEqual(outputOf('elsewhere', ['Bo owns CI']));
      expect((await store.get(`${key}:d`))?.output).toBeUndefined();
      // Nothing left to change.
      expect(await forget()).toBe(0);
    });
  });
}
