/**
 * Replicas' caches following each other's appends as they are heard (`ChannelStates.heard`, the
 * `AppendFeed` between them), on one in-memory store: what a notice brings, what it must not, and,
 * over random interleavings of appends, lost and late notices and splices, that every cache still
 * equals a fresh load after each of its appends.
 */
import { parseConfig, resolveChannel } from '@ebb/config';
import type { ContextDelta } from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CountingStore, comparable, toolStep } from '../../test/counting-channel-store.js';
import { type AppendedMessage, ChannelStates } from './channel-states.js';

const KEY = 'slack:T1:C1';
const tokenizer = await loadTokenizer('o200k_base');
const settings = resolveChannel(parseConfig('', 'feed.toml'), KEY);

/** The notices sent, in order, for the test to deliver (or lose, or hold back). */
class HeldFeed {
  readonly sent: { key: string; appended: ContextDelta }[] = [];
  publish(key: string, appended: ContextDelta): void {
    this.sent.push({ key, appended: structuredClone(appended) });
  }
}

let nextId = 0;
const said = (fields: Partial<AppendedMessage> = {}): AppendedMessage => {
  nextId++;
  return {
    role: 'user',
    author: 'a',
    text: `m${nextId} ${'word '.repeat(nextId % 7)}`,
    ts: '',
    platformMessageId: `p${nextId}`,
    ...fields,
  };
};
const step = (): AppendedMessage[] => {
  nextId++;
  return toolStep(`c${nextId}`);
};

async function replica(channels: CountingStore) {
  const feed = new HeldFeed();
  const states = new ChannelStates({ channels, contextChanged: async () => {}, feed });
  const state = await states.get(KEY);
  const turn = { key: KEY, state, tokenizer, settings };
  return { states, state, turn, feed };
}

describe('ChannelStates with a feed between replicas', () => {
  it("takes another replica's appends as heard, so its next append reads nothing back", async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await b.states.append(b.turn, said());
    await b.states.appendAll(b.turn, step());
    expect(b.feed.sent.map((n) => n.appended.raw.map((m) => m.seq))).toEqual([[1], [2, 3]]);
    for (const { key, appended } of b.feed.sent) a.states.heard(key, appended);
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));

    const [tails, loads] = [channels.tails, channels.loads];
    expect(await a.states.append(a.turn, said())).toEqual({ seq: 4, inserted: true });
    expect([channels.tails - tails, channels.loads - loads]).toEqual([0, 0]);
    expect(a.states.stats()).toMatchObject({ appendsHeard: 2, deltaLoads: 0, reloads: 0 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
  });

  it('ignores a notice that does not continue its copy; the next append catches up by the tail', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await b.states.append(b.turn, said());
    await b.states.append(b.turn, said());
    // The first notice is lost: the second starts past A's head + 1.
    const [, second] = b.feed.sent;
    a.states.heard(KEY, second?.appended as ContextDelta);
    expect(a.state.context.headSeq).toBe(0);
    // Heard twice, or late: the copy already holds it.
    a.states.heard(KEY, b.feed.sent[0]?.appended as ContextDelta);
    a.states.heard(KEY, b.feed.sent[0]?.appended as ContextDelta);
    expect(a.state.context.view().raw.map((m) => m.seq)).toEqual([1]);
    // Tokens that do not add up to the store's: not taken.
    a.states.heard(KEY, { ...(second?.appended as ContextDelta), tokens: 1 });
    expect(a.state.context.headSeq).toBe(1);

    const tails = channels.tails;
    expect(await a.states.append(a.turn, said())).toEqual({ seq: 3, inserted: true });
    expect(channels.tails - tails).toBe(1);
    expect(a.states.stats()).toMatchObject({ appendsHeard: 1, deltaLoads: 1, reloads: 0 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
  });

  it('ignores appends at another generation, and on a copy marked stale', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    for (let i = 0; i < 3; i++) await a.states.append(a.turn, said());
    for (const { key, appended } of a.feed.sent) b.states.heard(key, appended);
    expect(b.state.context.headSeq).toBe(3);
    // A's copy moves to generation 1 (a splice it reloaded after); B's appends at 0 are not for it.
    const before = (await channels.loadContext(KEY)).generation;
    await channels.splice(KEY, { jobId: 'pass-1', fromSeq: 1, toSeq: 2, text: 'S', tokens: 5 });
    a.states.markStale(KEY, before + 1);
    await a.states.get(KEY);
    const notice: ContextDelta = {
      generation: before,
      headSeq: 4,
      tokens: b.state.context.tokens + 9,
      raw: [{ seq: 4, role: 'user', author: 'a', text: 'old', tokens: 9 }],
    };
    a.states.heard(KEY, { ...notice, tokens: a.state.context.tokens + 9 });
    expect(a.state.context.headSeq).toBe(3);
    // B was told of the splice but has not reloaded yet: a notice at its old generation is not taken.
    b.states.markStale(KEY, before + 1);
    b.states.heard(KEY, notice);
    expect(b.state.context.headSeq).toBe(3);
    // A channel not cached is not loaded for a notice.
    const c = new ChannelStates({ channels, contextChanged: async () => {} });
    c.heard(KEY, notice);
    expect(c.stats()).toMatchObject({ channels: 0, misses: 0 });
  });

  it("does not keep a channel cached for another replica's traffic: what it serves itself stays", async () => {
    const channels = new CountingStore();
    const b = await replica(channels);
    const served = 'slack:T1:C2';
    const other = 'slack:T1:C3';
    await channels.append(served, { role: 'user', author: 'a', text: 'hi', tokens: 5, contextTokens: 5 });
    await channels.append(other, { role: 'user', author: 'a', text: 'hi', tokens: 5, contextTokens: 5 });
    // A cache that holds two of these channels (4,500 estimated bytes): KEY (only heard of), then the one it serves.
    const states = new ChannelStates({ channels, contextChanged: async () => {}, budgetBytes: () => 4_500 });
    await states.get(KEY);
    await states.get(served);
    for (let i = 0; i < 3; i++) {
      await b.states.append(b.turn, said());
      for (const { key, appended } of b.feed.sent.splice(0)) states.heard(key, appended);
    }
    expect(states.stats()).toMatchObject({ appendsHeard: 3, channels: 2 });
    // A third channel comes in: the one only heard of goes, not the one served.
    await states.get(other);
    const { misses } = states.stats();
    await states.get(served);
    expect(states.stats().misses).toBe(misses);
  });

  it('takes a tail read while appends were heard without reading the whole context again', async () => {
    const channels = new CountingStore();
    const a = await replica(channels);
    const b = await replica(channels);
    await b.states.append(b.turn, said());
    await b.states.append(b.turn, said());
    // The notices arrive while A is reading the tail after seq 0 for its own append.
    channels.duringTail = () => {
      channels.duringTail = undefined;
      for (const { key, appended } of b.feed.sent) a.states.heard(key, appended);
    };
    expect(await a.states.append(a.turn, said())).toEqual({ seq: 3, inserted: true });
    expect(a.states.stats()).toMatchObject({ appendsHeard: 2, deltaLoads: 1, reloads: 0 });
    expect(comparable(a.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
  });

  it('keeps every copy equal to a fresh load after its appends, whatever notices arrive', async () => {
    type Op =
      | { kind: 'append' | 'step'; replica: number }
      | { kind: 'deliver'; to: number; pick: number; drop: boolean }
      | { kind: 'splice' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('append' as const), replica: fc.nat(2) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('step' as const), replica: fc.nat(2) }) },
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant('deliver' as const),
          to: fc.nat(2),
          pick: fc.nat(),
          drop: fc.boolean(),
        }),
      },
      { weight: 1, arbitrary: fc.constant({ kind: 'splice' as const }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        const channels = new CountingStore();
        const replicas = [await replica(channels), await replica(channels), await replica(channels)];
        // Each replica's inbox: the notices of the others, delivered in any order, or lost.
        const inboxes: ContextDelta[][] = [[], [], []];
        const post = (from: number) => {
          const sender = replicas[from];
          for (const { appended } of sender?.feed.sent.splice(0) ?? [])
            inboxes.forEach((inbox, i) => {
              if (i !== from) inbox.push(appended);
            });
        };
        let spliced = 0;
        for (const o of ops) {
          if (o.kind === 'append' || o.kind === 'step') {
            const r = replicas[o.replica];
            if (!r) continue;
            if (o.kind === 'append') await r.states.append(r.turn, said());
            else await r.states.appendAll(r.turn, step());
            post(o.replica);
            expect(comparable(r.state.context.view())).toEqual(comparable(await channels.loadContext(KEY)));
          } else if (o.kind === 'deliver') {
            const inbox = inboxes[o.to];
            if (!inbox?.length) continue;
            const [notice] = inbox.splice(o.pick % inbox.length, 1);
            if (notice && !o.drop) replicas[o.to]?.states.heard(KEY, notice);
          } else {
            const { headSeq, spans } = await channels.loadContext(KEY);
            const fromSeq = (spans.at(-1)?.toSeq ?? 0) + 1;
            if (headSeq - fromSeq < 2) continue;
            spliced++;
            await channels.splice(KEY, {
              jobId: `pass-${spliced}`,
              fromSeq,
              toSeq: headSeq - 1,
              text: 'S',
              tokens: 5,
            });
          }
        }
        // A copy that took notices but never appended since may lag; it never runs ahead or differs.
        const stored = await channels.loadContext(KEY);
        for (const r of replicas) {
          const { raw, spans, headSeq, generation } = r.state.context.view();
          expect(headSeq).toBeLessThanOrEqual(stored.headSeq);
          if (generation !== stored.generation) continue;
          expect(spans).toEqual(stored.spans);
          expect(raw).toEqual(stored.raw.filter((m) => m.seq <= headSeq));
        }
      }),
      { numRuns: 150 },
    );
  });
});
