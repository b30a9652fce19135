/**
 * The bot's working-context cache is bounded by the bytes its contexts take (`[bot]
 * context_cache_mb`), least recently used out first, and a miss is one read of the store.
 */
import { parseConfig, resolveChannel } from '@ebb/config';
import { type NewMessage, WorkingContext } from '@ebb/core';
import { InMemoryChannelStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { describe, expect, it } from 'vitest';
import { ChannelStates, estimatedBytes } from './channel-states.js';

const tokenizer = await loadTokenizer('o200k_base');
const settings = resolveChannel(parseConfig('', 'cache.toml'), 'web:a');

/** Counts the store's reads: a miss must be one `loadChannel`, nothing else. */
class CountingStore extends InMemoryChannelStore {
  readonly reads: string[] = [];
  override async loadChannel(channelKey: string) {
    this.reads.push('loadChannel');
    return super.loadChannel(channelKey);
  }
  override async loadContext(channelKey: string) {
    this.reads.push('loadContext');
    return super.loadContext(channelKey);
  }
  override async calibration(channelKey: string) {
    this.reads.push('calibration');
    return super.calibration(channelKey);
  }
}

const message = (i: number): NewMessage => ({
  role: 'user',
  author: 'ana',
  text: `message ${i}`,
  tokens: 10,
  contextTokens: 10,
});

async function storeWith(channels: Record<string, number>): Promise<CountingStore> {
  const store = new CountingStore();
  for (const [key, count] of Object.entries(channels))
    for (let i = 1; i <= count; i++) await store.append(key, message(i));
  store.reads.length = 0;
  return store;
}

const statesOver = (channels: CountingStore, budgetBytes: () => number) =>
  new ChannelStates({ channels, contextChanged: async () => {}, budgetBytes });

describe('the context cache', () => {
  it('keeps what fits its budget in bytes, least recently used out first', async () => {
    const channels = await storeWith({ 'web:a': 3, 'web:b': 3, 'web:c': 3 });
    const one = estimatedBytes(new WorkingContext(await channels.loadContext('web:a')));
    channels.reads.length = 0;
    const states = statesOver(channels, () => 2 * one);

    await states.get('web:a');
    await states.get('web:b');
    await states.get('web:a');
    await states.get('web:c');
    expect(states.stats()).toEqual({
      hits: 1,
      misses: 3,
      reloads: 0,
      deltaLoads: 0,
      appendsHeard: 0,
      evictions: 1,
      channels: 2,
      bytes: 2 * one,
      budgetBytes: 2 * one,
    });
    // b was the least recently used: it went, and comes back with one read of the store.
    channels.reads.length = 0;
    await states.get('web:b');
    expect(channels.reads).toEqual(['loadChannel']);
    await states.get('web:b');
    expect(channels.reads).toEqual(['loadChannel']);
  });

  it('weighs a channel again as it grows, so a busy one pushes quiet ones out', async () => {
    const channels = await storeWith({ 'web:quiet': 1, 'web:busy': 1 });
    const one = estimatedBytes(new WorkingContext(await channels.loadContext('web:quiet')));
    const states = statesOver(channels, () => 6 * one);
    await states.get('web:quiet');
    const busy = await states.get('web:busy');

    let appended = 0;
    while (states.stats().channels === 2 && appended < 100) {
      await states.append(
        { key: 'web:busy', state: busy, tokenizer, settings },
        {
          role: 'user',
          author: 'bo',
          text: `status update ${++appended} on the deploy`,
          ts: '2026-11-27T00:00:00Z',
        },
      );
    }
    // The quiet channel went; the busy one, grown, is weighed at its new size and stays.
    const stats = states.stats();
    expect([stats.channels, stats.evictions, stats.bytes]).toEqual([1, 1, estimatedBytes(busy.context)]);
    expect(stats.bytes).toBeGreaterThan(5 * one);
    expect(stats.bytes).toBeLessThanOrEqual(stats.budgetBytes);
    expect(await states.get('web:busy')).toBe(busy);
  });

  it('applies a changed budget at the next load (a reloaded config)', async () => {
    const channels = await storeWith({ 'web:a': 2, 'web:b': 2, 'web:c': 2 });
    let budget = 1 << 20;
    const states = statesOver(channels, () => budget);
    await states.get('web:a');
    await states.get('web:b');
    budget = 1;
    await states.get('web:c');
    // Nothing fits a budget of one byte: every read is a load, and the bot still gets its state.
    expect(states.stats()).toMatchObject({ channels: 0, bytes: 0, budgetBytes: 1, evictions: 3 });
    expect((await states.get('web:a')).context.headSeq).toBe(2);
  });
});
