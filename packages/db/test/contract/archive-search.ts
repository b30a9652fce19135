/**
 * The archive search contract: one suite, run against every `ArchiveSearch` (in memory, Postgres,
 * PGlite) over the channel store it reads, so the fake the tool tests use finds what the real one
 * finds. Each test works in channels of its own, so implementations may share one database.
 */
import { randomUUID } from 'node:crypto';
import type { ArchiveReader, ArchiveSearch, HistoryQuery, NewMessage, TurnLog } from '@ebb/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

export interface ArchiveSearchStores {
  readonly channels: Pick<TurnLog, 'append'> & Pick<ArchiveReader, 'readArchive'>;
  readonly archive: ArchiveSearch;
  close(): Promise<void>;
}

function say(author: string, text: string, fields: Partial<NewMessage> = {}): NewMessage {
  return { role: 'user', author, text, tokens: 10, contextTokens: 10, ...fields };
}

/** Texts no query below should trip on, and a few that must be found. */
const HOSTILE_QUERIES = [
  "'",
  '"',
  '"unclosed phrase',
  '&|!():*',
  'a & b | !c <-> d',
  'foo:* & bar:A',
  '\\',
  "'; drop table messages; --",
  '((((((((((',
  '!!!!!!!!',
  '-',
  'or or or',
  '"" - "" or',
  'emoji 🦀 ünïcödé 漢字',
  'nul\u0000byte',
  'x'.repeat(3_000),
  Array.from({ length: 400 }, (_, i) => `w${i}`).join(' '),
];

export function describeArchiveSearchContract(
  name: string,
  makeStores: () => Promise<ArchiveSearchStores>,
): void {
  describe(`${name}: archive search contract`, () => {
    let stores: ArchiveSearchStores;
    let key: string;
    let other: string;
    beforeEach(async () => {
      stores = await makeStores();
      key = `web:${randomUUID()}`;
      other = `web:${randomUUID()}`;
    });
    afterEach(async () => {
      await stores.close();
    });

    const append = async (channel: string, ...batch: NewMessage[]) => {
      for (const m of batch) await stores.channels.append(channel, m);
    };
    const search = (text: string, fields: Partial<HistoryQuery> = {}) =>
      stores.archive.search(key, { text, limit: 50, ...fields });
    const seqsOf = (found: readonly { seq: number }[]) => found.map((m) => m.seq);

    describe('search', () => {
      it("never returns another channel's messages, even with the same text", async () => {
        await append(other, say('ana', 'the deploy password is hunter2'), say('bo', 'hunter2 again'));
        await append(key, say('ana', 'nothing to see'), say('ana', 'the deploy password is hunter2'));
        const found = await search('hunter2');
        expect(found.map((m) => [m.seq, m.text])).toEqual([[2, 'the deploy password is hunter2']]);
        expect(await search('again')).toEqual([]);
        expect(await stores.archive.search(`web:${randomUUID()}`, { text: 'hunter2', limit: 50 })).toEqual(
          [],
        );
      });

      it('gives the exact archived message back: text, author, role, ts, tokens, tool calls', async () => {
        const text = '  Line one: `rm -rf /tmp/x` & "quotes" — ünïcödé 🦀\n\n\tline three <b>raw</b>  ';
        const toolCalls = [{ id: 'c1', name: 'lookup', arguments: '{"q":"rollback plan"}' }];
        await append(
          key,
          say('ana', text, { ts: '2026-03-01T10:00:00Z', tokens: 37 }),
          say('ebb', '', { role: 'assistant', toolCalls }),
        );
        const [found] = await search('ünïcödé');
        expect(found).toEqual((await stores.channels.readArchive(key, 1, 1))[0]);
        expect(found).toEqual({
          seq: 1,
          role: 'user',
          author: 'ana',
          text,
          ts: '2026-03-01T10:00:00Z',
          tokens: 37,
        });
        // Tool calls are searched by their names and arguments.
        expect(await search('rollback')).toEqual(await stores.channels.readArchive(key, 2, 2));
        expect(seqsOf(await search('lookup'))).toEqual([2]);
      });

      it('filters by author (ignoring case), from and to (inclusive)', async () => {
        for (let i = 1; i <= 9; i++)
          await append(key, say(i % 3 === 0 ? 'Carol' : 'dan', `build ${i} failed`));
        expect(seqsOf(await search('build', { author: 'carol' }))).toEqual([9, 6, 3]);
        expect(seqsOf(await search('build', { author: 'CAROL', fromSeq: 4 }))).toEqual([9, 6]);
        expect(seqsOf(await search('failed', { fromSeq: 3, toSeq: 5 }))).toEqual([5, 4, 3]);
        expect(seqsOf(await search('failed', { toSeq: 2 }))).toEqual([2, 1]);
        expect(await search('failed', { author: 'nobody' })).toEqual([]);
        expect(await search('failed', { fromSeq: 10 })).toEqual([]);
        expect(await search('failed', { fromSeq: 6, toSeq: 5 })).toEqual([]);
      });

      it('needs every word, finds word forms, and honours or, -word and limit', async () => {
        await append(
          key,
          say('ana', 'we deployed the api to staging'),
          say('bo', 'deploying the web app now'),
          say('ana', 'staging is broken'),
          say('bo', 'api docs updated'),
        );
        expect(seqsOf(await search('deploy')).sort()).toEqual([1, 2]);
        expect(seqsOf(await search('deploy staging'))).toEqual([1]);
        expect(seqsOf(await search('staging -api'))).toEqual([3]);
        expect(seqsOf(await search('docs or broken')).sort()).toEqual([3, 4]);
        expect(await search('deploy', { limit: 1 })).toHaveLength(1);
        expect(await search('deploy', { limit: 0 })).toEqual([]);
      });

      it('ranks messages about the words above a long message that mentions one, ties newest first', async () => {
        await append(
          key,
          say('ana', 'kernel panic kernel panic kernel'),
          say('bo', 'after the update my wifi driver, sound card and the kernel all broke again somehow'),
          say('cy', 'kernel panic'),
          say('dee', 'kernel panic'),
          say('eve', 'a panic'),
        );
        // Short messages about the word first (the newer of two alike first), the long aside last.
        expect(seqsOf(await search('kernel'))).toEqual([4, 3, 1, 2]);
        // With `or`, a message holding both words beats one holding either.
        const either = seqsOf(await search('kernel or panic'));
        expect(either.indexOf(4)).toBeLessThan(either.indexOf(5));
        expect(either.indexOf(4)).toBeLessThan(either.indexOf(2));
      });

      it('finds nothing (and raises nothing) for an empty query, stop words only, or exclusions only', async () => {
        await append(key, say('ana', 'the plan is to ship it'), say('bo', 'ship it'));
        for (const text of ['', '   ', '!!!', 'the', 'it is the', '-plan', '""']) {
          expect(await search(text), JSON.stringify(text)).toEqual([]);
        }
      });

      it('takes any text as a query without an error', async () => {
        await append(key, say('ana', "kernel: don't panic (again) & reboot | now!"), say('bo', 'foo:* bar'));
        for (const text of HOSTILE_QUERIES) {
          const found = await search(text);
          expect(Array.isArray(found), text.slice(0, 40)).toBe(true);
        }
        // Punctuation around a word does not stop it from being found.
        expect(seqsOf(await search('kernel!!! (panic) & "reboot"'))).toEqual([1]);
        expect(await search("'; drop table messages; --")).toEqual([]);
        expect(seqsOf(await search('foo:*'))).toEqual([2]);
        // The archive is still there.
        expect(await stores.channels.readArchive(key, 1, 2)).toHaveLength(2);
      });

      it("does not find the history tools' own results, but finds other tool results", async () => {
        await append(
          key,
          say('ana', 'the invoice number is 7431'),
          say('search_history', '#1 ana: the invoice number is 7431', { role: 'tool', toolCallId: 'c1' }),
          say('read_history', '#1 ana: the invoice number is 7431', { role: 'tool', toolCallId: 'c2' }),
          say('billing', '{"invoice": 7431, "status": "paid"}', { role: 'tool', toolCallId: 'c3' }),
        );
        expect(seqsOf(await search('invoice 7431')).sort()).toEqual([1, 4]);
      });

      it(`searches the first ${100_000} characters of a message and returns it whole`, async () => {
        const text = `early marker ${'lorem ipsum dolor '.repeat(6_000)} late marker`;
        await append(key, say('tool', text));
        const [found] = await search('early');
        expect(found?.text).toBe(text);
        expect(await search('late')).toEqual([]);
      });
    });

    describe('read', () => {
      it("reads a seq range of this channel in order, at most limit messages, never another channel's", async () => {
        await append(other, ...Array.from({ length: 8 }, (_, i) => say('x', `other ${i}`)));
        await append(
          key,
          ...Array.from({ length: 5 }, (_, i) => say('ana', `mine ${i + 1}`, { ts: `t${i}` })),
        );
        expect(await stores.archive.read(key, 2, 4, 10)).toEqual(
          await stores.channels.readArchive(key, 2, 4),
        );
        expect(seqsOf(await stores.archive.read(key, 1, 100, 3))).toEqual([1, 2, 3]);
        expect((await stores.archive.read(key, 1, 100, 100)).map((m) => m.text)).toEqual([
          'mine 1',
          'mine 2',
          'mine 3',
          'mine 4',
          'mine 5',
        ]);
        expect(await stores.archive.read(key, 6, 8, 10)).toEqual([]);
        expect(await stores.archive.read(key, 4, 2, 10)).toEqual([]);
        expect(await stores.archive.read(key, 1, 5, 0)).toEqual([]);
        expect(await stores.archive.read(`web:${randomUUID()}`, 1, 5, 10)).toEqual([]);
      });
    });
  });
}
