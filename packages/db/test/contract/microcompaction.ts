/** The store contract: microcompaction's stubs for old tool results. */
import type { ContextMessage } from '@ebb/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { type ContractContext, type ContractStores, expectIntact, message } from './support.js';

export function microcompactionCases(current: () => ContractContext): void {
  let stores: ContractStores;
  let key: string;
  beforeEach(() => {
    ({ stores, key } = current());
  });

  /** Three tool turns (a call at seqs 1, 3, 5; its 200-token result right after), then a user message. */
  async function toolTurns(): Promise<void> {
    for (let i = 0; i < 3; i++) {
      await stores.channels.append(
        key,
        message(i, {
          role: 'assistant',
          author: 'ebb',
          text: '',
          toolCalls: [{ id: `c${i}`, name: 'ci.log', arguments: '{}' }],
        }),
      );
      await stores.channels.append(
        key,
        message(i, {
          role: 'tool',
          author: 'ci.log',
          text: `log ${i}`,
          toolCallId: `c${i}`,
          tokens: 200,
          contextTokens: 200,
        }),
      );
    }
    await stores.channels.append(key, message(7));
  }

  const stubOf = (raw: readonly ContextMessage[], seq: number): ContextMessage => {
    const m = raw.find((r) => r.seq === seq);
    if (!m) throw new Error(`no raw message ${seq}`);
    return { ...m, text: `[stub of #${seq}]`, tokens: 12, stubbed: true };
  };

  describe('stubToolResults', () => {
    it('puts the stubs in the context, keeps the whole results in the archive, and bumps the generation', async () => {
      await toolTurns();
      const before = await stores.channels.loadContext(key);
      const outcome = await stores.channels.stubToolResults(key, {
        expectedGeneration: before.generation,
        stubs: [stubOf(before.raw, 2), stubOf(before.raw, 4)],
      });
      expect(outcome).toEqual({
        kind: 'stubbed',
        generation: before.generation + 1,
        tokensBefore: before.tokens,
        tokensAfter: before.tokens - 2 * (200 - 12),
        stubbed: 2,
      });
      const view = await expectIntact(stores.channels, key);
      expect(view.generation).toBe(before.generation + 1);
      expect(view.raw.find((m) => m.seq === 2)).toEqual({
        seq: 2,
        role: 'tool',
        author: 'ci.log',
        text: '[stub of #2]',
        tokens: 12,
        toolCallId: 'c0',
        stubbed: true,
      });
      expect(view.raw.find((m) => m.seq === 6)?.stubbed).toBeUndefined();
      // The channel counts what microcompaction did, for `ebb status` and the dashboard.
      const [listed] = (await stores.channels.listChannels()).filter((c) => c.key === key);
      expect(listed?.microcompaction).toEqual({ stubbed: 2, tokensSaved: 2 * (200 - 12) });
      const archive = await stores.channels.readArchive(key, 2, 6);
      expect(archive.map((m) => [m.seq, m.text, m.tokens, m.stub])).toEqual([
        [2, 'log 0', 200, { text: '[stub of #2]', tokens: 12 }],
        [3, '', 10, undefined],
        [4, 'log 1', 200, { text: '[stub of #4]', tokens: 12 }],
        [5, '', 10, undefined],
        [6, 'log 2', 200, undefined],
      ]);
    });

    it('changes nothing when the channel moved on, or a seq is not a raw tool result left to stub', async () => {
      await toolTurns();
      const before = await stores.channels.loadContext(key);
      const stale = async (expectedGeneration: number, stubs: ContextMessage[]) => {
        const outcome = await stores.channels.stubToolResults(key, { expectedGeneration, stubs });
        expect(outcome.kind).toBe('stale');
        expect(await stores.channels.loadContext(key)).toEqual(before);
      };
      await stale(before.generation + 1, [stubOf(before.raw, 2)]);
      await stale(before.generation, [stubOf(before.raw, 2), stubOf(before.raw, 3)]); // a call, not a result
      await stale(before.generation, [stubOf(before.raw, 7)]); // a user message
      await stores.channels.stubToolResults(key, {
        expectedGeneration: before.generation,
        stubs: [stubOf(before.raw, 2)],
      });
      const stubbed = await stores.channels.loadContext(key);
      const again = await stores.channels.stubToolResults(key, {
        expectedGeneration: stubbed.generation,
        stubs: [stubOf(stubbed.raw, 2)],
      });
      expect(again.kind).toBe('stale');
    });

    it('refuses a stub for a result a truncation already set aside', async () => {
      await toolTurns();
      for (let i = 8; i <= 20; i++) await stores.channels.append(key, message(i));
      const before = await stores.channels.loadContext(key);
      await stores.channels.truncate(key, { fraction: 0.5, protectRecent: 4, markerTokens: 30 });
      const cut = await stores.channels.loadContext(key);
      const outcome = await stores.channels.stubToolResults(key, {
        expectedGeneration: cut.generation,
        stubs: [stubOf(before.raw, 2)],
      });
      expect(outcome.kind).toBe('stale');
      await expectIntact(stores.channels, key);
    });

    it('loses the stub when forgetting overwrites the result with a tombstone', async () => {
      await toolTurns();
      const before = await stores.channels.loadContext(key);
      await stores.channels.stubToolResults(key, {
        expectedGeneration: before.generation,
        stubs: [stubOf(before.raw, 2)],
      });
      await stores.channels.redactArchive(key, [
        { seq: 2, role: 'tool', author: 'ci.log', text: '[redacted]', tokens: 5, toolCallId: 'c0' },
      ]);
      const [archived] = await stores.channels.readArchive(key, 2, 2);
      expect(archived?.stub).toBeUndefined();
      expect(archived?.text).toBe('[redacted]');
      const view = await expectIntact(stores.channels, key);
      expect(view.raw.find((m) => m.seq === 2)).toMatchObject({ text: '[redacted]', tokens: 5 });
      expect(view.raw.find((m) => m.seq === 2)?.stubbed).toBeUndefined();
    });
  });
}
