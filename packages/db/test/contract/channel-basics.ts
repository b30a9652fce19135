/** The store contract: appends, reads, calibration and the channel list. */
import { UNCALIBRATED } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { appendMany, type ContractContext, type ContractStores, expectIntact, message } from './support.js';

export function channelBasicsCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  describe('append', () => {
    it('assigns seqs 1, 2, 3 and counts the context tokens', async () => {
      const results = [];
      for (let i = 1; i <= 3; i++) results.push(await stores.channels.append(key, message(i)));
      expect(results).toEqual([
        { seq: 1, inserted: true, generation: 0, contextTokens: 10 },
        { seq: 2, inserted: true, generation: 0, contextTokens: 20 },
        { seq: 3, inserted: true, generation: 0, contextTokens: 30 },
      ]);
    });

    it('stores a message delivered twice once', async () => {
      await stores.channels.append(key, message(1, { platformMessageId: 'a' }));
      await stores.channels.append(key, message(2, { platformMessageId: 'b' }));
      const again = await stores.channels.append(key, message(3, { platformMessageId: 'a', text: 'retry' }));
      expect(again).toEqual({ seq: 1, inserted: false, generation: 0, contextTokens: 20 });
      const view = await expectIntact(stores.channels, key);
      expect(view.headSeq).toBe(2);
      expect((await stores.channels.readArchive(key, 1, 1))[0]?.text).toBe('message 1');
    });

    it('stores concurrent duplicate deliveries once and gives concurrent appends distinct seqs', async () => {
      const appends = [];
      for (let i = 0; i < 12; i++) {
        const id = i < 6 ? `dup${i % 2}` : `solo${i}`;
        appends.push(stores.channels.append(key, message(i, { platformMessageId: id })));
      }
      const results = await Promise.all(appends);
      expect(results.filter((r) => r.inserted)).toHaveLength(8);
      for (const dup of [0, 1]) {
        const seqs = new Set(results.filter((_, i) => i < 6 && i % 2 === dup).map((r) => r.seq));
        expect(seqs.size).toBe(1);
      }
      const seqs = results.filter((r) => r.inserted).map((r) => r.seq);
      expect(seqs.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      const view = await expectIntact(stores.channels, key);
      expect(view.tokens).toBe(80);
    });

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
        stores.channels.append(key, message(i, { platformMessageId: `other${i}` })),
      );
      const group = stores.channels.appendAll(key, [call, ...results]);
      others.push(...Array.from({ length: 24 }, (_, i) => stores.channels.append(key, message(i + 4))));
      const [seqs] = await Promise.all([group.then((rs) => rs.map((r) => r.seq)), Promise.all(others)]);
      const first = seqs[0] ?? 0;
      expect(seqs).toEqual(Array.from({ length: 13 }, (_, i) => first + i));
      const view = await expectIntact(stores.channels, key);
      expect(view.headSeq).toBe(41);
      expect(view.raw.slice(first - 1, first + 12).map((m) => m.role)).toEqual([
        'assistant',
        ...ids.map(() => 'tool'),
      ]);
      await expect(
        stores.channels.appendAll(key, [message(1, { platformMessageId: 'posted' })]),
      ).rejects.toThrow(/without a platform id/);
    });

    it('keeps the whole message in the archive and the clipped copy in the context', async () => {
      const whole = 'x'.repeat(2_000);
      await stores.channels.append(
        key,
        message(1, {
          text: whole,
          tokens: 500,
          contextText: 'x…x',
          contextTokens: 100,
          omittedTokens: 400,
        }),
      );
      const view = await stores.channels.loadContext(key);
      expect(view.raw).toEqual([
        { seq: 1, role: 'user', author: 'u1', text: 'x…x', tokens: 100, omittedTokens: 400 },
      ]);
      expect(view.tokens).toBe(100);
      expect(await stores.channels.readArchive(key, 1, 1)).toEqual([
        { seq: 1, role: 'user', author: 'u1', text: whole, tokens: 500 },
      ]);
    });

    it('keeps tool calls, tool results and platform timestamps', async () => {
      const toolCalls = [{ id: 'c1', name: 'lookup', arguments: '{"q":"tea"}' }];
      await stores.channels.append(key, message(1, { ts: '1700000000.000100' }));
      await stores.channels.append(key, message(2, { role: 'assistant', author: 'ebb', toolCalls }));
      await stores.channels.append(key, message(3, { role: 'tool', author: 'lookup', toolCallId: 'c1' }));
      const view = await stores.channels.loadContext(key);
      expect(view.raw).toEqual([
        { seq: 1, role: 'user', author: 'u1', text: 'message 1', tokens: 10, ts: '1700000000.000100' },
        { seq: 2, role: 'assistant', author: 'ebb', text: 'message 2', tokens: 10, toolCalls },
        { seq: 3, role: 'tool', author: 'lookup', text: 'message 3', tokens: 10, toolCallId: 'c1' },
      ]);
      const archive = await stores.channels.readArchive(key, 2, 3);
      expect(archive.map((m) => [m.toolCalls, m.toolCallId])).toEqual([
        [toolCalls, undefined],
        [undefined, 'c1'],
      ]);
    });
  });
  describe('loadContext', () => {
    it('is empty for a channel never seen', async () => {
      expect(await stores.channels.loadContext(key)).toEqual({
        generation: 0,
        headSeq: 0,
        spans: [],
        raw: [],
        tokens: 0,
      });
      expect(await stores.channels.generation(key)).toBe(0);
      expect(await stores.channels.readArchive(key, 1, 10)).toEqual([]);
    });

    it('returns the appended messages in order', async () => {
      await appendMany(stores.channels, key, 5);
      const view = await expectIntact(stores.channels, key);
      expect(view).toMatchObject({ generation: 0, headSeq: 5, spans: [], tokens: 50 });
      expect(view.raw.map((m) => m.text)).toEqual([1, 2, 3, 4, 5].map((i) => `message ${i}`));
      expect((await stores.channels.readArchive(key, 2, 4)).map((m) => m.seq)).toEqual([2, 3, 4]);
    });
  });
  describe('readAuthors', () => {
    it('lists the distinct authors of a range, sorted, also where a summary covers it', async () => {
      await appendMany(stores.channels, key, 6);
      await stores.channels.append(key, message(7, { author: 'Zoë' }));
      await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S', tokens: 5 });
      expect(await stores.channels.readAuthors(key, 1, 7)).toEqual(['Zoë', 'u0', 'u1', 'u2']);
      expect(await stores.channels.readAuthors(key, 2, 3)).toEqual(['u0', 'u2']);
      expect(await stores.channels.readAuthors(key, 8, 9)).toEqual([]);
      expect(await stores.channels.readAuthors(`${key}:none`, 1, 9)).toEqual([]);
    });
  });
  describe('calibration', () => {
    it('starts uncalibrated and keeps what is set', async () => {
      expect(await stores.channels.calibration(key)).toEqual(UNCALIBRATED);
      await stores.channels.setCalibration(key, { factor: 1.25, samples: 3 });
      expect(await stores.channels.calibration(key)).toEqual({ factor: 1.25, samples: 3 });
      await stores.channels.append(key, message(1));
      await stores.channels.setCalibration(key, { factor: 0.75, samples: 4 });
      expect(await stores.channels.calibration(key)).toEqual({ factor: 0.75, samples: 4 });
      expect((await stores.channels.loadContext(key)).headSeq).toBe(1);
    });

    it('loads with the context in one read, also for a channel never seen', async () => {
      await appendMany(stores.channels, key, 3);
      await stores.channels.setCalibration(key, { factor: 1.5, samples: 2 });
      const loaded = await stores.channels.loadChannel(key);
      expect(loaded.calibration).toEqual({ factor: 1.5, samples: 2 });
      expect(loaded.context.raw.map((m) => m.seq)).toEqual([1, 2, 3]);
      expect(await stores.channels.loadChannel(`${key}:none`)).toEqual({
        context: { generation: 0, headSeq: 0, spans: [], raw: [], tokens: 0 },
        calibration: UNCALIBRATED,
      });
    });
  });
  describe('listChannels', () => {
    it('lists every channel by key with its head, generation and context tokens', async () => {
      // Other tests may share the store: look only at this test's keys.
      const ours = async () => (await stores.channels.listChannels()).filter((c) => c.key.startsWith(key));
      const none = { stubbed: 0, tokensSaved: 0 };
      expect(await ours()).toEqual([]);
      await appendMany(stores.channels, `${key}:b`, 10);
      await stores.channels.splice(`${key}:b`, {
        jobId: 'j1',
        fromSeq: 1,
        toSeq: 4,
        text: 'S1',
        tokens: 7,
      });
      const started = Date.now();
      await appendMany(stores.channels, `${key}:a`, 2);
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

    it('gives one channel as the list gives it, and nothing for a channel it does not hold', async () => {
      await appendMany(stores.channels, `${key}:a`, 3);
      await appendMany(stores.channels, `${key}:b`, 5);
      await stores.channels.setCalibration(`${key}:b`, { factor: 1.5, samples: 2 });
      const listed = (await stores.channels.listChannels()).filter((c) => c.key.startsWith(key));
      expect(listed.map((c) => c.key)).toEqual([`${key}:a`, `${key}:b`]);
      for (const c of listed) expect(await stores.channels.channelSummary(c.key)).toEqual(c);
      expect(await stores.channels.channelSummary(`${key}:b`)).toMatchObject({
        headSeq: 5,
        calibration: { factor: 1.5, samples: 2 },
      });
      expect(await stores.channels.channelSummary(`${key}:none`)).toBeUndefined();
      // A key that is a prefix of held ones is not one of them.
      expect(await stores.channels.channelSummary(key)).toBeUndefined();
    });
  });
}
