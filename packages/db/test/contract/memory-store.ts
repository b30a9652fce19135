/** The store contract of the `MemoryStore`: upserts without duplicates, recall within scopes, lists. */
import type { MemoryStore, NewMemory } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ContractContext } from './support.js';

export function memoryStoreContract(current: () => ContractContext<MemoryStore>): void {
  describe('MemoryStore', () => {
    let store: MemoryStore;
    let key: string;
    beforeEach(() => {
      ({ store, key } = current());
    });

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
      const batch = [memory('Ana prefers green tea'), memory('The release is on Friday', { type: 'event' })];
      expect(await store.upsert(batch)).toEqual({ added: 2, refreshed: 0 });
      expect(await store.upsert(batch)).toEqual({ added: 0, refreshed: 2 });
      expect(await store.list({ scope: key })).toHaveLength(2);
    });

    it('refreshes a near-duplicate: first text kept, importance raised, never lowered', async () => {
      await store.upsert([memory('Ana prefers green tea.', { importance: 0.4, speaker: 'ana' })]);
      expect(await store.upsert([memory('ana prefers the GREEN tea', { importance: 0.8 })])).toEqual({
        added: 0,
        refreshed: 1,
      });
      await store.upsert([memory('Ana prefers green tea', { importance: 0.2 })]);
      const [stored, ...rest] = await store.list({ scope: key });
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
      await store.upsert([
        memory('Deploys happen on Tuesdays', { importance: 0.3 }),
        memory('The on-call rotation is weekly', { importance: 0.9 }),
        memory('Ana owns the billing service', { importance: 0.6, speaker: 'ana' }),
      ]);
      expect(await store.count({ scope: key })).toBe(3);
      expect(await store.count({ scope: key, speaker: 'ana' })).toBe(1);
      expect(await store.count({ scope: `${key}:none` })).toBe(0);
      const top = await store.list({ scope: key }, { order: 'importance', limit: 2 });
      expect(top.map((m) => m.text)).toEqual([
        'The on-call rotation is weekly',
        'Ana owns the billing service',
      ]);
      // Ids follow the batch's write order (by fingerprint), not the order proposed.
      const byId = await store.list({ scope: key }, { limit: 1 });
      expect(byId.map((m) => m.text)).toEqual(['Ana owns the billing service']);
    });

    it('counts a duplicate within one batch as a refresh', async () => {
      const result = await store.upsert([
        memory('Deploys freeze on Friday'),
        memory('deploys freeze on friday!'),
      ]);
      expect(result).toEqual({ added: 1, refreshed: 1 });
      expect(await store.list({ scope: key })).toHaveLength(1);
    });

    it('keeps the same memory in two scopes apart', async () => {
      const other = `${key}:other`;
      await store.upsert([memory('Ana prefers tea'), memory('Ana prefers tea', { scope: other })]);
      expect(await store.list({ scope: key })).toHaveLength(1);
      expect(await store.list({ scope: other })).toHaveLength(1);
    });

    it("never recalls another scope's memory", async () => {
      const other = `${key}:other`;
      await store.upsert([
        memory('Deploys happen on Friday'),
        memory('Deploys happen on Monday', { scope: other }),
      ]);
      const mine = await store.recall({
        scopes: [key],
        text: 'when do deploys happen?',
        limit: 10,
      });
      expect(mine.map((m) => m.text)).toEqual(['Deploys happen on Friday']);
      const both = await store.recall({ scopes: [key, other], text: 'deploys', limit: 10 });
      expect(both).toHaveLength(2);
      expect(await store.recall({ scopes: [], text: 'deploys', limit: 10 })).toEqual([]);
      expect(await store.recall({ scopes: [key], text: 'the of and', limit: 10 })).toEqual([]);
    });

    it('ranks relevant and important memories first', async () => {
      await store.upsert([
        memory('Bob drinks tea sometimes'),
        memory('Ana prefers green tea'),
        memory('The release train leaves on Friday', { importance: 1 }),
        memory('Carol likes espresso', { importance: 0.1 }),
        memory('Dan likes espresso', { importance: 0.9 }),
      ]);
      const tea = await store.recall({
        scopes: [key],
        text: 'What tea does Ana prefer?',
        limit: 10,
      });
      expect(tea.map((m) => m.text)).toEqual(['Ana prefers green tea', 'Bob drinks tea sometimes']);
      const espresso = await store.recall({ scopes: [key], text: 'espresso', limit: 10 });
      expect(espresso.map((m) => m.text)).toEqual(['Dan likes espresso', 'Carol likes espresso']);
      expect(await store.recall({ scopes: [key], text: 'espresso', limit: 1 })).toHaveLength(1);
    });

    it('applies the bar of shared words before the limit', async () => {
      // Twenty-five memories share one word of the question and outrank, on importance, the one
      // that shares two: without the bar they fill the limit and it is lost.
      const oneWord = Array.from({ length: 25 }, (_, i) =>
        memory(`Replica ${i + 1} keeps a copy of the database`, { importance: 1 }),
      );
      const twoWords = 'The database migration runs on Sunday';
      await store.upsert([...oneWord, memory(twoWords, { importance: 0 })]);
      const question = { scopes: [key], text: 'When is the database migration?', limit: 20 };
      expect((await store.recall(question)).map((m) => m.text)).not.toContain(twoWords);
      const barred = await store.recall({ ...question, minSharedTerms: 2 });
      expect(barred.map((m) => m.text)).toEqual([twoWords]);
      // A question of one topic word asks for that word only.
      expect(await store.recall({ ...question, text: 'migration?', minSharedTerms: 2 })).toHaveLength(1);
      expect(await store.recall({ ...question, text: 'is it ok?', minSharedTerms: 2 })).toEqual([]);
    });

    it('lists by channel, speaker and scope, and forgets by id', async () => {
      const elsewhere = `${key}:elsewhere`;
      await store.upsert([
        memory('Ana prefers tea', { speaker: 'ana', type: 'preference' }),
        memory('Bob owns the deploy script', { speaker: 'bob', type: 'person' }),
        memory('Standup moves to 10am', { channelKey: elsewhere, type: 'decision' }),
      ]);
      // Within a batch, memories are stored in fingerprint order (type first).
      expect((await store.list({ channelKey: key })).map((m) => m.text)).toEqual([
        'Bob owns the deploy script',
        'Ana prefers tea',
      ]);
      expect((await store.list({ speaker: 'bob', scope: key })).map((m) => m.type)).toEqual(['person']);
      const all = await store.list({ scope: key });
      expect(all).toHaveLength(3);
      const tea = all.find((m) => m.text === 'Ana prefers tea');
      expect(typeof tea?.id).toBe('string');
      expect(await store.forget([tea?.id ?? '', 'not-an-id', '999999999'])).toBe(1);
      expect((await store.list({ scope: key })).map((m) => m.text)).not.toContain('Ana prefers tea');
      // A forgotten memory may be learned again.
      expect(await store.upsert([memory('Ana prefers tea')])).toEqual({ added: 1, refreshed: 0 });
    });
  });
}
