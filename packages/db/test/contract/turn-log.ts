/**
 * The store contract of the `TurnLog`: appends (fenced or not), and the working context, the tail
 * of it after a seq, generation and calibration.
 */
import {
  type ArchiveReader,
  type ContextView,
  type ContextWriter,
  contextEntryOf,
  FencedAppendError,
  type NewMessage,
  type TurnLog,
  UNCALIBRATED,
  WorkingContext,
} from '@ebb/core';
import { fc } from '@fast-check/vitest';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, expectIntact, message, stubOf, toolTurns } from './support.js';

/** The turn log, and what its cases read the archive with or move the generation by. */
export type TurnLogUnderTest = TurnLog &
  Pick<ArchiveReader, 'readArchive' | 'loadPrefix'> &
  Pick<ContextWriter, 'splice' | 'stubToolResults'>;

/** What a cached context must agree with the store on (an in-memory view also lists its tool results). */
function comparable(view: ContextView) {
  const { generation, headSeq, spans, raw, tokens } = view;
  return { generation, headSeq, spans, raw, tokens };
}

/** Steps of two writers on one channel: the first keeps a cache current by tails, the other does not. */
const steps = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant('cached' as const), count: fc.integer({ min: 1, max: 3 }) }),
    },
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant('other' as const), count: fc.integer({ min: 1, max: 3 }) }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'splice' as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'catchUp' as const }) },
  ),
  { minLength: 1, maxLength: 12 },
);

export function turnLogContract(current: () => ContractContext<TurnLogUnderTest>): void {
  describe('TurnLog', () => {
    let store: TurnLogUnderTest;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

    describe('append', () => {
      it('assigns seqs 1, 2, 3 and counts the context tokens', async () => {
        const results = [];
        for (let i = 1; i <= 3; i++) results.push(await store.append(key, message(i)));
        expect(results).toEqual([
          { seq: 1, inserted: true, generation: 0, contextTokens: 10, headSeq: 1 },
          { seq: 2, inserted: true, generation: 0, contextTokens: 20, headSeq: 2 },
          { seq: 3, inserted: true, generation: 0, contextTokens: 30, headSeq: 3 },
        ]);
      });

      it('stores a message delivered twice once', async () => {
        await store.append(key, message(1, { platformMessageId: 'a' }));
        await store.append(key, message(2, { platformMessageId: 'b' }));
        const again = await store.append(key, message(3, { platformMessageId: 'a', text: 'retry' }));
        // The store's head rides along: a cache holding only message 1 knows it is behind.
        expect(again).toEqual({ seq: 1, inserted: false, generation: 0, contextTokens: 20, headSeq: 2 });
        const view = await expectIntact(store, key);
        expect(view.headSeq).toBe(2);
        expect((await store.readArchive(key, 1, 1))[0]?.text).toBe('message 1');
      });

      it('stores concurrent duplicate deliveries once and gives concurrent appends distinct seqs', async () => {
        const appends = [];
        for (let i = 0; i < 12; i++) {
          const id = i < 6 ? `dup${i % 2}` : `solo${i}`;
          appends.push(store.append(key, message(i, { platformMessageId: id })));
        }
        const results = await Promise.all(appends);
        expect(results.filter((r) => r.inserted)).toHaveLength(8);
        for (const dup of [0, 1]) {
          const seqs = new Set(results.filter((_, i) => i < 6 && i % 2 === dup).map((r) => r.seq));
          expect(seqs.size).toBe(1);
        }
        const seqs = results.filter((r) => r.inserted).map((r) => r.seq);
        expect(seqs.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
        const view = await expectIntact(store, key);
        expect(view.tokens).toBe(80);
      });

      it('keeps the whole message in the archive and the clipped copy in the context', async () => {
        const whole = 'x'.repeat(2_000);
        await store.append(
          key,
          message(1, {
            text: whole,
            tokens: 500,
            contextText: 'x…x',
            contextTokens: 100,
            omittedTokens: 400,
          }),
        );
        const view = await store.loadContext(key);
        expect(view.raw).toEqual([
          { seq: 1, role: 'user', author: 'u1', text: 'x…x', tokens: 100, omittedTokens: 400 },
        ]);
        expect(view.tokens).toBe(100);
        expect(await store.readArchive(key, 1, 1)).toEqual([
          { seq: 1, role: 'user', author: 'u1', text: whole, tokens: 500 },
        ]);
      });

      it('keeps tool calls, tool results and platform timestamps', async () => {
        const toolCalls = [{ id: 'c1', name: 'lookup', arguments: '{"q":"tea"}' }];
        await store.append(key, message(1, { ts: '1700000000.000100' }));
        await store.append(key, message(2, { role: 'assistant', author: 'ebb', toolCalls }));
        await store.append(key, message(3, { role: 'tool', author: 'lookup', toolCallId: 'c1' }));
        const view = await store.loadContext(key);
        expect(view.raw).toEqual([
          { seq: 1, role: 'user', author: 'u1', text: 'message 1', tokens: 10, ts: '1700000000.000100' },
          { seq: 2, role: 'assistant', author: 'ebb', text: 'message 2', tokens: 10, toolCalls },
          { seq: 3, role: 'tool', author: 'lookup', text: 'message 3', tokens: 10, toolCallId: 'c1' },
        ]);
        const archive = await store.readArchive(key, 2, 3);
        expect(archive.map((m) => [m.toolCalls, m.toolCallId])).toEqual([
          [toolCalls, undefined],
          [undefined, 'c1'],
        ]);
      });
    });
    describe('appendAll', () => {
      it('appends a tool call and its results at consecutive seqs, whatever is appended meanwhile', async () => {
        const ids = Array.from({ length: 12 }, (_, i) => `call${i}`);
        const call = message(0, {
          role: 'assistant',
          author: 'ebb',
          text: '',
          toolCalls: ids.map((id) => ({ id, name: 'ci.log', arguments: '{}' })),
        });
        const results = ids.map((id) =>
          message(0, { role: 'tool', author: 'ci.log', text: id, toolCallId: id }),
        );
        // Another replica's messages race the group, before and while it is written.
        const others = Array.from({ length: 4 }, (_, i) =>
          store.append(key, message(i, { platformMessageId: `other${i}` })),
        );
        const group = store.appendAll(key, [call, ...results]);
        others.push(...Array.from({ length: 24 }, (_, i) => store.append(key, message(i + 4))));
        const [seqs] = await Promise.all([group.then((rs) => rs.map((r) => r.seq)), Promise.all(others)]);
        const first = seqs[0] ?? 0;
        expect(seqs).toEqual(Array.from({ length: 13 }, (_, i) => first + i));
        const view = await expectIntact(store, key);
        expect(view.headSeq).toBe(41);
        expect(view.raw.slice(first - 1, first + 12).map((m) => m.role)).toEqual([
          'assistant',
          ...ids.map(() => 'tool'),
        ]);
        await expect(store.appendAll(key, [message(1, { platformMessageId: 'posted' })])).rejects.toThrow(
          /without a platform id/,
        );
      });
    });
    describe('append with a fence', () => {
      const refusal = (fence: number) =>
        expect.objectContaining({ code: 'channel_lease_lost', retryable: false, fence });

      it('refuses a fence lower than the channel’s, storing nothing, and takes an equal or higher one', async () => {
        await store.append(key, message(1), { fence: 2 });
        const before = await store.loadContext(key);
        const refused = await store.append(key, message(2), { fence: 1 }).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(FencedAppendError);
        expect(refused).toEqual(refusal(1));
        expect(await store.loadContext(key)).toEqual(before);
        expect(await store.readArchive(key, 1, 5)).toHaveLength(1);
        // The same fence again (the holder's next message), then the next holder's.
        await store.append(key, message(2), { fence: 2 });
        await store.append(key, message(3), { fence: 5 });
        await expect(store.append(key, message(4), { fence: 4 })).rejects.toEqual(refusal(4));
        expect((await expectIntact(store, key)).headSeq).toBe(3);
      });

      it('takes an append without a fence unchecked, and it leaves the stored fence', async () => {
        await store.append(key, message(1), { fence: 3 });
        await store.append(key, message(2));
        await expect(store.append(key, message(3), { fence: 2 })).rejects.toEqual(refusal(2));
        await store.append(key, message(3), { fence: 3 });
        expect((await expectIntact(store, key)).headSeq).toBe(3);
      });

      it('gives a new channel the fence it was created with', async () => {
        await store.append(key, message(1), { fence: 2 ** 53 - 2 });
        await expect(store.append(key, message(2), { fence: 7 })).rejects.toEqual(refusal(7));
        await store.append(key, message(2), { fence: 2 ** 53 - 1 });
        expect((await store.loadContext(key)).headSeq).toBe(2);
      });

      it('refuses a redelivery under a stale fence; one under a good fence changes nothing, the fence included', async () => {
        await store.append(key, message(1, { platformMessageId: 'p1' }), { fence: 5 });
        await expect(
          store.append(key, message(1, { platformMessageId: 'p1' }), { fence: 4 }),
        ).rejects.toEqual(refusal(4));
        expect(await store.append(key, message(1, { platformMessageId: 'p1' }), { fence: 9 })).toMatchObject({
          seq: 1,
          inserted: false,
        });
        // The redelivery did not raise the fence: 6 is still above the channel's.
        expect(await store.append(key, message(2), { fence: 6 })).toMatchObject({ seq: 2, inserted: true });
        expect((await expectIntact(store, key)).headSeq).toBe(2);
      });

      it('refuses a group under a stale fence whole, and stores one under a good fence', async () => {
        const step = (fence: number) =>
          store.appendAll(
            key,
            [
              message(0, {
                role: 'assistant',
                author: 'ebb',
                text: '',
                toolCalls: [{ id: `c${fence}`, name: 'lookup', arguments: '{}' }],
              }),
              message(0, { role: 'tool', author: 'lookup', toolCallId: `c${fence}` }),
            ],
            { fence },
          );
        await store.append(key, message(1), { fence: 3 });
        await expect(step(2)).rejects.toEqual(refusal(2));
        expect((await store.loadContext(key)).headSeq).toBe(1);
        expect((await step(4)).map((r) => r.seq)).toEqual([2, 3]);
        await expect(store.append(key, message(4), { fence: 3 })).rejects.toEqual(refusal(3));
        expect((await expectIntact(store, key)).headSeq).toBe(3);
      });

      it('refuses a fence that is not a safe integer from 0, storing nothing', async () => {
        for (const fence of [-1, 1.5, Number.NaN, 2 ** 53]) {
          await expect(store.append(key, message(1), { fence })).rejects.toMatchObject({
            code: 'invariant_violated',
          });
          await expect(store.appendAll(key, [message(1)], { fence })).rejects.toMatchObject({
            code: 'invariant_violated',
          });
        }
        expect((await store.loadContext(key)).headSeq).toBe(0);
      });
    });
    describe('loadAfter', () => {
      it('is the tail of loadContext after any seq, clipped copies and stubs as they are', async () => {
        await store.append(
          key,
          message(0, {
            text: 'x'.repeat(400),
            tokens: 100,
            contextText: 'x…x',
            contextTokens: 5,
            omittedTokens: 95,
          }),
        );
        await toolTurns(store, key);
        const unstubbed = await store.loadContext(key);
        await store.stubToolResults(key, {
          expectedGeneration: unstubbed.generation,
          stubs: [stubOf(unstubbed.raw, 3)],
        });
        const view = await store.loadContext(key);
        expect(view.raw.some((m) => m.stubbed) && view.raw.some((m) => m.omittedTokens)).toBe(true);
        for (let after = 0; after <= view.headSeq + 1; after++) {
          expect(await store.loadAfter(key, after)).toEqual({
            generation: view.generation,
            headSeq: view.headSeq,
            tokens: view.tokens,
            raw: view.raw.filter((m) => m.seq > after),
          });
        }
      });

      it('never reaches into the compacted prefix, and is empty for a channel never seen', async () => {
        await appendMany(store, key, 6);
        await store.splice(key, { jobId: `${key}:j1`, fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
        const view = await store.loadContext(key);
        expect(await store.loadAfter(key, 0)).toEqual({
          generation: view.generation,
          headSeq: 6,
          tokens: view.tokens,
          raw: view.raw,
        });
        expect(view.raw.map((m) => m.seq)).toEqual([5, 6]);
        expect(await store.loadAfter(`${key}:none`, 0)).toEqual({
          generation: 0,
          headSeq: 0,
          tokens: 0,
          raw: [],
        });
      });

      it('brings a cache behind by appends level; a splice or stubs show as another generation', async () => {
        await toolTurns(store, key);
        const cache = new WorkingContext(await store.loadContext(key));
        // Another writer appends: same generation, and the tail continues the cache.
        await store.append(key, message(8));
        await store.append(key, message(9));
        const delta = await store.loadAfter(key, cache.headSeq);
        expect(delta.generation).toBe(cache.generation);
        for (const m of delta.raw) cache.append(m);
        expect(comparable(cache.view())).toEqual(comparable(await store.loadContext(key)));
        // Stubs change what the context holds before the head: the generation says so.
        await store.stubToolResults(key, {
          expectedGeneration: cache.generation,
          stubs: [stubOf(cache.view().raw, 2)],
        });
        const stubbed = await store.loadAfter(key, cache.headSeq);
        expect(stubbed).toMatchObject({ headSeq: cache.headSeq, raw: [] });
        expect(stubbed.generation).not.toBe(cache.generation);
        // So does a splice.
        const at = stubbed.generation;
        await store.splice(key, { jobId: `${key}:j1`, fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
        expect((await store.loadAfter(key, cache.headSeq)).generation).not.toBe(at);
      });

      it('keeps a cache current by tails, whatever another writer appends or splices between', async () => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(steps, async (plan) => {
            const channel = `${key}:${run++}`;
            let n = 0;
            const next = (): NewMessage => message(++n, { tokens: n, contextTokens: n });
            let cache = new WorkingContext(await store.loadContext(channel));
            /** The cache brought level: by the tail at the same generation, else loaded whole. */
            const catchUp = async () => {
              const delta = await store.loadAfter(channel, cache.headSeq);
              if (delta.generation !== cache.generation) {
                cache = new WorkingContext(await store.loadContext(channel));
                return;
              }
              for (const m of delta.raw) cache.append(m);
            };
            /** The cache's own appends: extended by them when nothing came between, else caught up. */
            const appendCached = async (batch: NewMessage[]) => {
              const results = await store.appendAll(channel, batch);
              const follows = results.every(
                (r, i) => r.generation === cache.generation && r.seq === cache.headSeq + 1 + i,
              );
              if (!follows) return catchUp();
              batch.forEach((m, i) => {
                cache.append(contextEntryOf(m, results[i]?.seq ?? 0));
              });
            };
            const spliceMost = async () => {
              const { headSeq } = await store.loadContext(channel);
              if (headSeq < 2) return;
              await store.splice(channel, {
                jobId: `${channel}:${n}`,
                fromSeq: 1,
                toSeq: headSeq - 1,
                text: 'S',
                tokens: 1,
              });
            };
            for (const step of plan) {
              if (step.kind === 'cached') await appendCached(Array.from({ length: step.count }, next));
              else if (step.kind === 'other')
                for (let i = 0; i < step.count; i++) await store.append(channel, next());
              else if (step.kind === 'splice') await spliceMost();
              else await catchUp();
            }
            await catchUp();
            expect(comparable(cache.view())).toEqual(comparable(await store.loadContext(channel)));
          }),
          { numRuns: 25 },
        );
      });
    });
    describe('loadContext', () => {
      it('is empty for a channel never seen', async () => {
        expect(await store.loadContext(key)).toEqual({
          generation: 0,
          headSeq: 0,
          spans: [],
          raw: [],
          tokens: 0,
        });
        expect(await store.generation(key)).toBe(0);
        expect(await store.readArchive(key, 1, 10)).toEqual([]);
      });

      it('returns the appended messages in order', async () => {
        await appendMany(store, key, 5);
        const view = await expectIntact(store, key);
        expect(view).toMatchObject({ generation: 0, headSeq: 5, spans: [], tokens: 50 });
        expect(view.raw.map((m) => m.text)).toEqual([1, 2, 3, 4, 5].map((i) => `message ${i}`));
        expect((await store.readArchive(key, 2, 4)).map((m) => m.seq)).toEqual([2, 3, 4]);
      });
    });
    describe('generation', () => {
      it('reads the context’s generation alone: appends keep it, a splice bumps it', async () => {
        expect(await store.generation(key)).toBe(0);
        await appendMany(store, key, 6);
        expect(await store.generation(key)).toBe(0);
        await store.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 3, text: 'S', tokens: 5 });
        expect(await store.generation(key)).toBe(1);
        // An append reports the generation it landed on, and the context's tokens, spans included.
        expect(await store.append(key, message(7))).toEqual({
          seq: 7,
          inserted: true,
          generation: 1,
          contextTokens: 5 + 40,
          headSeq: 7,
        });
        expect(await store.generation(key)).toBe((await store.loadContext(key)).generation);
        expect(await store.generation(`${key}:none`)).toBe(0);
      });
    });
    describe('loadChannel', () => {
      it('loads with the context in one read, also for a channel never seen', async () => {
        await appendMany(store, key, 3);
        await store.setCalibration(key, { factor: 1.5, samples: 2 });
        const loaded = await store.loadChannel(key);
        expect(loaded.calibration).toEqual({ factor: 1.5, samples: 2 });
        expect(loaded.context.raw.map((m) => m.seq)).toEqual([1, 2, 3]);
        expect(await store.loadChannel(`${key}:none`)).toEqual({
          context: { generation: 0, headSeq: 0, spans: [], raw: [], tokens: 0 },
          calibration: UNCALIBRATED,
        });
      });
    });
    describe('calibration, setCalibration', () => {
      it('starts uncalibrated and keeps what is set', async () => {
        expect(await store.calibration(key)).toEqual(UNCALIBRATED);
        await store.setCalibration(key, { factor: 1.25, samples: 3 });
        expect(await store.calibration(key)).toEqual({ factor: 1.25, samples: 3 });
        await store.append(key, message(1));
        await store.setCalibration(key, { factor: 0.75, samples: 4 });
        expect(await store.calibration(key)).toEqual({ factor: 0.75, samples: 4 });
        expect((await store.loadContext(key)).headSeq).toBe(1);
      });
    });
  });
}
