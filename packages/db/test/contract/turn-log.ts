/** The store contract of the `TurnLog`: appends, and the working context, generation and calibration. */
import { type ArchiveReader, type ContextWriter, type TurnLog, UNCALIBRATED } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, expectIntact, message } from './support.js';

/** The turn log, and what its cases read the archive with or move the generation by. */
export type TurnLogUnderTest = TurnLog &
  Pick<ArchiveReader, 'readArchive' | 'loadPrefix'> &
  Pick<ContextWriter, 'splice'>;

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
