/**
 * The store contract: one suite, run against every implementation of the ports (in memory, Postgres,
 * PGlite), so the fake the unit tests use behaves exactly like the real thing. Each test works in a
 * channel, scope and job ids of its own, so implementations may share one database across tests.
 */
import { randomUUID } from 'node:crypto';
import {
  type ChannelStore,
  type CompactionRun,
  type ContextView,
  type MemoryStore,
  type NewMemory,
  type NewMessage,
  type RunStore,
  type SummaryOutput,
  UNCALIBRATED,
} from '@ebb/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

export interface ContractStores {
  readonly channels: ChannelStore;
  readonly memories: MemoryStore;
  readonly runs: RunStore;
  close(): Promise<void>;
}

/** Messages of 10 tokens unless told otherwise. */
function message(i: number, fields: Partial<NewMessage> = {}): NewMessage {
  return {
    role: 'user',
    author: `u${i % 3}`,
    text: `message ${i}`,
    tokens: 10,
    contextTokens: 10,
    ...fields,
  };
}

async function appendMany(channels: ChannelStore, key: string, count: number): Promise<void> {
  for (let i = 1; i <= count; i++) await channels.append(key, message(i, { platformMessageId: `p${i}` }));
}

/**
 * What must hold after anything: active spans tile 1..k, raw messages are k+1..head, each seq once;
 * the context's token total is the sum of its parts; the archive still holds every message.
 */
async function expectIntact(channels: ChannelStore, key: string): Promise<ContextView> {
  const view = await channels.loadContext(key);
  const covered: number[] = [];
  for (const s of view.spans) for (let seq = s.fromSeq; seq <= s.toSeq; seq++) covered.push(seq);
  for (const m of view.raw) covered.push(m.seq);
  expect(covered).toEqual(Array.from({ length: view.headSeq }, (_, i) => i + 1));
  const recount = [...view.spans, ...view.raw].reduce((n, part) => n + part.tokens, 0);
  expect(view.tokens).toBe(recount);
  const archive = await channels.readArchive(key, 1, view.headSeq);
  expect(archive.map((m) => m.seq)).toEqual(Array.from({ length: view.headSeq }, (_, i) => i + 1));
  // The prefix alone is the same prefix.
  expect(await channels.loadPrefix(key)).toEqual({
    generation: view.generation,
    headSeq: view.headSeq,
    spans: view.spans,
  });
  return view;
}

export function describeStoreContract(name: string, makeStores: () => Promise<ContractStores>): void {
  describe(`${name}: store contract`, () => {
    let stores: ContractStores;
    let key: string;

    beforeEach(async () => {
      stores = await makeStores();
      key = `web:${randomUUID()}`;
    });
    afterEach(async () => {
      await stores.close();
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
        const again = await stores.channels.append(
          key,
          message(3, { platformMessageId: 'a', text: 'retry' }),
        );
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

    describe('truncate', () => {
      const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

      it('sets the oldest messages aside behind a marker', async () => {
        await appendMany(stores.channels, key, 20);
        const outcome = await stores.channels.truncate(key, request);
        expect(outcome).toEqual({
          kind: 'truncate',
          plan: {
            kind: 'truncate',
            generation: 0,
            fromSeq: 1,
            toSeq: 10,
            extendsLast: false,
            droppedMessages: 10,
            droppedTokens: 100,
            markerTokens: 30,
          },
          generation: 1,
          tokensBefore: 200,
          tokensAfter: 130,
        });
        const view = await expectIntact(stores.channels, key);
        expect(view.spans).toEqual([
          { kind: 'truncated', fromSeq: 1, toSeq: 10, tokens: 30, createdGeneration: 1 },
        ]);
        expect(view.raw[0]?.seq).toBe(11);
      });

      it('extends the marker it follows', async () => {
        await appendMany(stores.channels, key, 20);
        await stores.channels.truncate(key, request);
        const outcome = await stores.channels.truncate(key, request);
        expect(outcome).toMatchObject({
          kind: 'truncate',
          generation: 2,
          plan: { extendsLast: true, fromSeq: 1 },
        });
        const view = await expectIntact(stores.channels, key);
        expect(view.spans).toHaveLength(1);
        expect(view.spans[0]).toMatchObject({
          kind: 'truncated',
          fromSeq: 1,
          tokens: 30,
          createdGeneration: 2,
        });
      });

      it('never separates a tool call from its results', async () => {
        const toolCalls = [{ id: 'c1', name: 'lookup', arguments: '{}' }];
        await stores.channels.append(key, message(1));
        await stores.channels.append(key, message(2));
        await stores.channels.append(key, message(3, { role: 'assistant', author: 'ebb', toolCalls }));
        await stores.channels.append(key, message(4, { role: 'tool', author: 'lookup', toolCallId: 'c1' }));
        for (let i = 5; i <= 10; i++) await stores.channels.append(key, message(i));
        // 30% of 100 tokens ends after the call; the cut moves past its result.
        const outcome = await stores.channels.truncate(key, { ...request, fraction: 0.3, protectRecent: 2 });
        expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
        await expectIntact(stores.channels, key);
      });

      it('keeps a call whose results have not arrived', async () => {
        for (let i = 1; i <= 4; i++) await stores.channels.append(key, message(i));
        await stores.channels.append(
          key,
          message(5, {
            role: 'assistant',
            author: 'ebb',
            toolCalls: [{ id: 'c', name: 'f', arguments: '{}' }],
          }),
        );
        const outcome = await stores.channels.truncate(key, { ...request, fraction: 1, protectRecent: 0 });
        expect(outcome).toMatchObject({ kind: 'truncate', plan: { toSeq: 4 } });
      });

      it('has nothing to do on an empty or fully protected context', async () => {
        expect(await stores.channels.truncate(key, request)).toEqual({ kind: 'nothing', reason: 'empty' });
        await appendMany(stores.channels, key, 3);
        expect(await stores.channels.truncate(key, request)).toEqual({
          kind: 'nothing',
          reason: 'all_protected',
        });
        expect(await stores.channels.generation(key)).toBe(0);
      });
    });

    describe('a truncation while a pass is running', () => {
      const request = { fraction: 0.5, protectRecent: 4, markerTokens: 30 };

      it('cuts nothing when the channel moved past the generation the cut was decided on', async () => {
        await appendMany(stores.channels, key, 20);
        await stores.channels.splice(key, { jobId: 'j0', fromSeq: 1, toSeq: 5, text: 'S', tokens: 12 });
        // Decided on generation 0; a splice made it 1 meanwhile.
        expect(await stores.channels.truncate(key, { ...request, expectedGeneration: 0 })).toEqual({
          kind: 'nothing',
          reason: 'stale',
        });
        expect((await expectIntact(stores.channels, key)).spans.map((s) => s.kind)).toEqual(['summary']);
        expect(await stores.channels.truncate(key, { ...request, expectedGeneration: 1 })).toMatchObject({
          kind: 'truncate',
          generation: 2,
        });
      });

      it('is healed by the pass when the pass covers the marker', async () => {
        await appendMany(stores.channels, key, 20);
        // The pass was planned over 1..10 at generation 0; the truncation lands while it runs.
        await stores.channels.truncate(key, request);
        const outcome = await stores.channels.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 10,
          text: 'S',
          tokens: 12,
        });
        expect(outcome).toMatchObject({ kind: 'splice', generation: 2, tokensBefore: 130, tokensAfter: 112 });
        const view = await expectIntact(stores.channels, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 10]]);
      });

      it('is trimmed by a pass that covers part of it', async () => {
        await appendMany(stores.channels, key, 20);
        await stores.channels.truncate(key, request);
        const outcome = await stores.channels.splice(key, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 6,
          text: 'S',
          tokens: 12,
        });
        expect(outcome).toMatchObject({ kind: 'splice', generation: 2, messagesRemoved: 0 });
        const view = await expectIntact(stores.channels, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([
          ['summary', 1, 6],
          ['truncated', 7, 10],
        ]);
        expect(view.tokens).toBe(12 + 30 + 100);
      });

      it('makes a pass that lost to a wider one stale, and loses nothing', async () => {
        await appendMany(stores.channels, key, 20);
        await stores.channels.truncate(key, request);
        const wide = await stores.channels.splice(key, {
          jobId: 'wide',
          fromSeq: 1,
          toSeq: 12,
          text: 'W',
          tokens: 9,
        });
        expect(wide).toMatchObject({ kind: 'splice', messagesRemoved: 2 });
        const narrow = await stores.channels.splice(key, {
          jobId: 'narrow',
          fromSeq: 1,
          toSeq: 6,
          text: 'N',
          tokens: 4,
        });
        expect(narrow.kind).toBe('stale');
        const view = await expectIntact(stores.channels, key);
        expect(view.spans.map((s) => [s.kind, s.fromSeq, s.toSeq])).toEqual([['summary', 1, 12]]);
        expect(view.generation).toBe(2);
      });

      it('keeps every seq covered once through racing truncations and splices', async () => {
        await appendMany(stores.channels, key, 40);
        const work = [
          stores.channels.truncate(key, request),
          stores.channels.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
          stores.channels.truncate(key, { ...request, fraction: 0.3 }),
          stores.channels.splice(key, { jobId: 'b', fromSeq: 1, toSeq: 20, text: 'B', tokens: 5 }),
          stores.channels.append(key, message(41)),
          stores.channels.splice(key, { jobId: 'a', fromSeq: 1, toSeq: 8, text: 'A', tokens: 5 }),
        ];
        await Promise.all(work);
        const view = await expectIntact(stores.channels, key);
        expect(view.headSeq).toBe(41);
      });
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
        expect(
          await stores.channels.replaceSummary(key, { ...replacement, toSeq: 5, replaces: 'j1' }),
        ).toEqual({
          kind: 'missing',
        });
        expect(
          await stores.channels.replaceSummary(`${key}:none`, { ...replacement, replaces: 'j1' }),
        ).toEqual({
          kind: 'missing',
        });
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
          (await stores.channels.splice(key, { jobId: 'j3', fromSeq: 1, toSeq: 8, text: 'W', tokens: 5 }))
            .kind,
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

      it('never touches active spans when redacting retired ones', async () => {
        await appendMany(stores.channels, key, 8);
        await stores.channels.splice(key, { jobId: 'j1', fromSeq: 1, toSeq: 4, text: 'S1', tokens: 5 });
        await stores.channels.splice(key, { jobId: 'j2', fromSeq: 1, toSeq: 6, text: 'S2', tokens: 5 });
        const before = await stores.channels.loadContext(key);
        expect(
          await stores.channels.redactRetiredSpans(key, [{ fromSeq: 2, toSeq: 2 }]),
        ).toBeGreaterThanOrEqual(0);
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
        const changed = await stores.runs.forgetCheckpoints({
          channelKey: key,
          ranges: [{ fromSeq: 4, toSeq: 4 }],
          memoryTexts: ['The vault code is 7431'],
        });
        expect(changed).toBe(2);
        expect((await stores.runs.get(`${key}:a`))?.output).toBeUndefined();
        expect((await stores.runs.get(`${key}:a`))?.status).toBe('queued');
        expect((await stores.runs.get(`${key}:b`))?.output).toEqual(output('later', ['Ana likes tea']));
        expect((await stores.runs.get(`${key}:c`))?.output).toEqual(output('elsewhere', ['Bo owns CI']));
        expect((await stores.runs.get(`${key}:d`))?.output).toBeUndefined();
        // Nothing left to change.
        expect(
          await stores.runs.forgetCheckpoints({
            channelKey: key,
            ranges: [{ fromSeq: 4, toSeq: 4 }],
            memoryTexts: ['The vault code is 7431'],
          }),
        ).toBe(0);
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
    });

    describe('listChannels', () => {
      it('lists every channel by key with its head, generation and context tokens', async () => {
        // Other tests may share the store: look only at this test's keys.
        const ours = async () => (await stores.channels.listChannels()).filter((c) => c.key.startsWith(key));
        expect(await ours()).toEqual([]);
        await appendMany(stores.channels, `${key}:b`, 10);
        await stores.channels.splice(`${key}:b`, {
          jobId: 'j1',
          fromSeq: 1,
          toSeq: 4,
          text: 'S1',
          tokens: 7,
        });
        await appendMany(stores.channels, `${key}:a`, 2);
        expect(await ours()).toEqual([
          { key: `${key}:a`, headSeq: 2, generation: 0, tokens: 20 },
          { key: `${key}:b`, headSeq: 10, generation: 1, tokens: 67 },
        ]);
      });
    });

    describe('memories', () => {
      const memory = (text: string, fields: Partial<NewMemory> = {}): NewMemory => ({
        type: 'fact',
        text,
        importance: 0.5,
        scope: key,
        channelKey: key,
        fromSeq: 1,
        toSeq: 2,
        ...fields,
      });

      it('never duplicates a retried upsert', async () => {
        const batch = [
          memory('Ana prefers green tea'),
          memory('The release is on Friday', { type: 'event' }),
        ];
        expect(await stores.memories.upsert(batch)).toEqual({ added: 2, refreshed: 0 });
        expect(await stores.memories.upsert(batch)).toEqual({ added: 0, refreshed: 2 });
        expect(await stores.memories.list({ scope: key })).toHaveLength(2);
      });

      it('refreshes a near-duplicate: first text kept, importance raised, never lowered', async () => {
        await stores.memories.upsert([memory('Ana prefers green tea.', { importance: 0.4, speaker: 'ana' })]);
        expect(
          await stores.memories.upsert([memory('ana prefers the GREEN tea', { importance: 0.8 })]),
        ).toEqual({
          added: 0,
          refreshed: 1,
        });
        await stores.memories.upsert([memory('Ana prefers green tea', { importance: 0.2 })]);
        const [stored, ...rest] = await stores.memories.list({ scope: key });
        expect(rest).toEqual([]);
        expect(stored).toMatchObject({
          type: 'fact',
          text: 'Ana prefers green tea.',
          speaker: 'ana',
          scope: key,
          fromSeq: 1,
          toSeq: 2,
        });
        expect(stored?.importance).toBeCloseTo(0.8, 5);
      });

      it('counts, and lists the most important first within a limit', async () => {
        await stores.memories.upsert([
          memory('Deploys happen on Tuesdays', { importance: 0.3 }),
          memory('The on-call rotation is weekly', { importance: 0.9 }),
          memory('Ana owns the billing service', { importance: 0.6, speaker: 'ana' }),
        ]);
        expect(await stores.memories.count({ scope: key })).toBe(3);
        expect(await stores.memories.count({ scope: key, speaker: 'ana' })).toBe(1);
        expect(await stores.memories.count({ scope: `${key}:none` })).toBe(0);
        const top = await stores.memories.list({ scope: key }, { order: 'importance', limit: 2 });
        expect(top.map((m) => m.text)).toEqual([
          'The on-call rotation is weekly',
          'Ana owns the billing service',
        ]);
        // Ids follow the batch's write order (by fingerprint), not the order proposed.
        const byId = await stores.memories.list({ scope: key }, { limit: 1 });
        expect(byId.map((m) => m.text)).toEqual(['Ana owns the billing service']);
      });

      it('counts a duplicate within one batch as a refresh', async () => {
        const result = await stores.memories.upsert([
          memory('Deploys freeze on Friday'),
          memory('deploys freeze on friday!'),
        ]);
        expect(result).toEqual({ added: 1, refreshed: 1 });
        expect(await stores.memories.list({ scope: key })).toHaveLength(1);
      });

      it('keeps the same memory in two scopes apart', async () => {
        const other = `${key}:other`;
        await stores.memories.upsert([
          memory('Ana prefers tea'),
          memory('Ana prefers tea', { scope: other }),
        ]);
        expect(await stores.memories.list({ scope: key })).toHaveLength(1);
        expect(await stores.memories.list({ scope: other })).toHaveLength(1);
      });

      it("never recalls another scope's memory", async () => {
        const other = `${key}:other`;
        await stores.memories.upsert([
          memory('Deploys happen on Friday'),
          memory('Deploys happen on Monday', { scope: other }),
        ]);
        const mine = await stores.memories.recall({
          scopes: [key],
          text: 'when do deploys happen?',
          limit: 10,
        });
        expect(mine.map((m) => m.text)).toEqual(['Deploys happen on Friday']);
        const both = await stores.memories.recall({ scopes: [key, other], text: 'deploys', limit: 10 });
        expect(both).toHaveLength(2);
        expect(await stores.memories.recall({ scopes: [], text: 'deploys', limit: 10 })).toEqual([]);
        expect(await stores.memories.recall({ scopes: [key], text: 'the of and', limit: 10 })).toEqual([]);
      });

      it('ranks relevant and important memories first', async () => {
        await stores.memories.upsert([
          memory('Bob drinks tea sometimes'),
          memory('Ana prefers green tea'),
          memory('The release train leaves on Friday', { importance: 1 }),
          memory('Carol likes espresso', { importance: 0.1 }),
          memory('Dan likes espresso', { importance: 0.9 }),
        ]);
        const tea = await stores.memories.recall({
          scopes: [key],
          text: 'What tea does Ana prefer?',
          limit: 10,
        });
        expect(tea.map((m) => m.text)).toEqual(['Ana prefers green tea', 'Bob drinks tea sometimes']);
        const espresso = await stores.memories.recall({ scopes: [key], text: 'espresso', limit: 10 });
        expect(espresso.map((m) => m.text)).toEqual(['Dan likes espresso', 'Carol likes espresso']);
        expect(await stores.memories.recall({ scopes: [key], text: 'espresso', limit: 1 })).toHaveLength(1);
      });

      it('lists by channel, speaker and scope, and forgets by id', async () => {
        const elsewhere = `${key}:elsewhere`;
        await stores.memories.upsert([
          memory('Ana prefers tea', { speaker: 'ana', type: 'preference' }),
          memory('Bob owns the deploy script', { speaker: 'bob', type: 'person' }),
          memory('Standup moves to 10am', { channelKey: elsewhere, type: 'decision' }),
        ]);
        // Within a batch, memories are stored in fingerprint order (type first).
        expect((await stores.memories.list({ channelKey: key })).map((m) => m.text)).toEqual([
          'Bob owns the deploy script',
          'Ana prefers tea',
        ]);
        expect((await stores.memories.list({ speaker: 'bob', scope: key })).map((m) => m.type)).toEqual([
          'person',
        ]);
        const all = await stores.memories.list({ scope: key });
        expect(all).toHaveLength(3);
        const tea = all.find((m) => m.text === 'Ana prefers tea');
        expect(typeof tea?.id).toBe('string');
        expect(await stores.memories.forget([tea?.id ?? '', 'not-an-id', '999999999'])).toBe(1);
        expect((await stores.memories.list({ scope: key })).map((m) => m.text)).not.toContain(
          'Ana prefers tea',
        );
        // A forgotten memory may be learned again.
        expect(await stores.memories.upsert([memory('Ana prefers tea')])).toEqual({ added: 1, refreshed: 0 });
      });
    });

    describe('runs', () => {
      const range = (jobId: string) => ({
        jobId,
        channelKey: key,
        tier: 'background' as const,
        usage: 0.82,
        fromSeq: 1,
        toSeq: 10,
        generation: 3,
      });
      const output: SummaryOutput = {
        text: 'summary',
        memories: [{ type: 'fact', text: 'Ana prefers tea', importance: 0.5, fromSeq: 1, toSeq: 2 }],
        fallback: false,
        model: 'gpt-test',
        calls: [
          {
            purpose: 'summary',
            model: 'gpt-test',
            inputTokens: 100,
            outputTokens: 20,
            durationMs: 5,
            attempts: 1,
          },
        ],
      };

      it('records a run once, starts it per attempt and finishes it', async () => {
        const jobId = `${key}:j1`;
        expect(await stores.runs.start(jobId)).toBeUndefined();
        await stores.runs.create(range(jobId));
        await stores.runs.create({ ...range(jobId), tier: 'aggressive', usage: 0.9 });
        expect(await stores.runs.get(jobId)).toMatchObject({
          ...range(jobId),
          status: 'queued',
          attempts: 0,
        });

        expect(await stores.runs.start(jobId)).toMatchObject({ status: 'queued', attempts: 0 });
        expect(await stores.runs.start(jobId)).toMatchObject({ status: 'running', attempts: 1 });
        await stores.runs.saveOutput(jobId, output);
        expect((await stores.runs.get(jobId))?.output).toEqual(output);

        await stores.runs.finish(jobId, { status: 'running', error: 'llm_timeout' });
        expect((await stores.runs.get(jobId))?.finishedAt).toBeUndefined();
        await stores.runs.finish(jobId, {
          status: 'completed',
          tokensBefore: 1000,
          tokensAfter: 400,
          summaryTokens: 50,
          memoriesAdded: 1,
          model: 'gpt-test',
          fallback: false,
          inputTokens: 100,
          outputTokens: 20,
          durationMs: 1234,
        });
        const run = await stores.runs.get(jobId);
        expect(run).toMatchObject({
          ...range(jobId),
          status: 'completed',
          attempts: 2,
          tokensBefore: 1000,
          tokensAfter: 400,
          summaryTokens: 50,
          memoriesAdded: 1,
          model: 'gpt-test',
          fallback: false,
          inputTokens: 100,
          outputTokens: 20,
          durationMs: 1234,
          error: 'llm_timeout',
        });
        expect(typeof run?.createdAt).toBe('number');
        expect(typeof run?.finishedAt).toBe('number');

        // A retried job of a finished run gets it back unchanged.
        expect(await stores.runs.start(jobId)).toMatchObject({ status: 'completed', attempts: 2 });
        expect(await stores.runs.get(jobId)).toMatchObject({ status: 'completed', attempts: 2 });
      });

      it('reopens a failed or skipped run whose job runs again, but never a completed or stale one', async () => {
        for (const status of ['failed', 'skipped'] as const) {
          const jobId = `${key}:${status}`;
          await stores.runs.create(range(jobId));
          await stores.runs.start(jobId);
          await stores.runs.finish(jobId, { status, error: 'x' });
          expect(await stores.runs.start(jobId)).toMatchObject({ status });
          expect(await stores.runs.get(jobId)).toMatchObject({ status: 'running', attempts: 2 });
        }
        const stale = `${key}:stale`;
        await stores.runs.create(range(stale));
        await stores.runs.finish(stale, { status: 'stale' });
        await stores.runs.start(stale);
        expect(await stores.runs.get(stale)).toMatchObject({ status: 'stale', attempts: 0 });
      });

      it('keeps the first checkpoint: a second worker on the job gets the stored output back', async () => {
        const jobId = `${key}:checkpoint`;
        await stores.runs.create(range(jobId));
        const first = { text: 'first', memories: [], fallback: false, model: 'm', calls: [] };
        const second = { ...first, text: 'second' };
        expect(await stores.runs.saveOutput(jobId, first)).toEqual(first);
        expect(await stores.runs.saveOutput(jobId, second)).toEqual(first);
        expect((await stores.runs.get(jobId))?.output).toEqual(first);
      });

      it('finishes only from the given statuses when asked to', async () => {
        const jobId = `${key}:only-from`;
        await stores.runs.create(range(jobId));
        await stores.runs.start(jobId);
        await stores.runs.finish(jobId, { status: 'skipped', error: 'escalated' }, { onlyFrom: ['queued'] });
        expect(await stores.runs.get(jobId)).toMatchObject({ status: 'running' });
        await stores.runs.finish(jobId, { status: 'completed' }, { onlyFrom: ['running'] });
        expect(await stores.runs.get(jobId)).toMatchObject({ status: 'completed' });
      });

      it('keeps a usage the worker did not know (NaN) until the bot records it', async () => {
        const jobId = `${key}:nan`;
        await stores.runs.create({ ...range(jobId), usage: Number.NaN });
        expect((await stores.runs.get(jobId))?.usage).toBeNaN();
        await stores.runs.create({ ...range(jobId), usage: 0.83 });
        expect((await stores.runs.get(jobId))?.usage).toBeCloseTo(0.83);
        await stores.runs.create({ ...range(jobId), usage: 0.99 });
        expect((await stores.runs.get(jobId))?.usage).toBeCloseTo(0.83);
      });

      it('lists a channel’s recent runs newest first', async () => {
        for (let i = 1; i <= 4; i++) await stores.runs.create(range(`${key}:r${i}`));
        await stores.runs.create({ ...range(`${key}:o`), channelKey: `${key}:other` });
        const recent = await stores.runs.recent(key, 3);
        expect(recent.map((r) => r.jobId)).toEqual([`${key}:r4`, `${key}:r3`, `${key}:r2`]);
        expect(await stores.runs.get('missing')).toBeUndefined();
        await stores.runs.finish('missing', { status: 'failed' });
        expect(await stores.runs.get('missing')).toBeUndefined();
      });

      it('lists unfinished runs across channels, oldest first, created before a time', async () => {
        const ids = ['queued', 'running', 'done', 'other'].map((s) => `${key}:unfinished-${s}`);
        const [queued = '', running = '', done = '', other = ''] = ids;
        await stores.runs.create(range(queued));
        await stores.runs.create(range(running));
        await stores.runs.start(running);
        await stores.runs.create(range(done));
        await stores.runs.finish(done, { status: 'completed' });
        await stores.runs.create({ ...range(other), channelKey: `${key}:other` });
        const ours = (runs: readonly CompactionRun[]) =>
          runs.map((r) => r.jobId).filter((id) => ids.includes(id));

        const later = Date.now() + 60_000;
        expect(ours(await stores.runs.unfinished({ createdBefore: later, limit: 10_000 }))).toEqual([
          queued,
          running,
          other,
        ]);
        const created = (await stores.runs.get(queued))?.createdAt ?? 0;
        expect(ours(await stores.runs.unfinished({ createdBefore: created, limit: 10_000 }))).toEqual([]);
        expect(await stores.runs.unfinished({ createdBefore: later, limit: 0 })).toEqual([]);
      });
    });
  });
}
