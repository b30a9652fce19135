import { describe, expect, it } from 'vitest';
import { LruMap } from './lru-map.js';

describe('LruMap', () => {
  it('forgets the least recently used entry beyond its capacity', () => {
    const lru = new LruMap<string, number>(2);
    lru.set('a', 1).set('b', 2);
    lru.get('a');
    lru.set('c', 3);

    expect([lru.has('a'), lru.has('b'), lru.has('c')]).toEqual([true, false, true]);
    expect(lru.size).toBe(2);
  });

  it('setting an entry again makes it the most recent', () => {
    const lru = new LruMap<string, number>(2);
    lru.set('a', 1).set('b', 2).set('a', 10).set('c', 3);
    expect([lru.get('a'), lru.has('b'), lru.get('c')]).toEqual([10, false, 3]);
  });

  it('getOrSet computes a missing value once', () => {
    const lru = new LruMap<string, number>(2);
    let calls = 0;
    const make = () => ++calls;
    expect([lru.getOrSet('a', make), lru.getOrSet('a', make), calls]).toEqual([1, 1, 1]);
  });

  it('refuses a capacity below one', () => {
    expect(() => new LruMap(0)).toThrow(RangeError);
  });
});

describe('LruMap weighed', () => {
  it('keeps the total weight within maxWeight, least recently used out first', () => {
    const lru = new LruMap<string, string>({ capacity: 100, maxWeight: 10 });
    lru.set('a', 'A', 4).set('b', 'B', 4);
    lru.get('a');
    lru.set('c', 'C', 4);

    expect([lru.has('a'), lru.has('b'), lru.has('c')]).toEqual([true, false, true]);
    expect([lru.weight, lru.evictions]).toEqual([8, 1]);
  });

  it('weighs an entry set again by its new weight', () => {
    const lru = new LruMap<string, string>({ capacity: 100, maxWeight: 10 });
    lru.set('a', 'A', 2).set('b', 'B', 2).set('a', 'A2', 7);
    expect([lru.weight, lru.has('b')]).toEqual([9, true]);
    lru.set('b', 'B', 5);
    expect([lru.has('a'), lru.weight]).toEqual([false, 5]);
  });

  it('peeks and reweighs an entry in its place, so neither makes it recent', () => {
    const lru = new LruMap<string, string>({ capacity: 100, maxWeight: 10 });
    lru.set('a', 'A', 2).set('b', 'B', 2);
    expect(lru.peek('a')).toBe('A');
    expect(lru.reweigh('a', 3)).toBe(true);
    expect(lru.reweigh('missing', 1)).toBe(false);
    expect(lru.weight).toBe(5);
    // 'a' is still the least recently used: it goes first.
    lru.set('c', 'C', 6);
    expect([lru.has('a'), lru.has('b'), lru.has('c'), lru.weight]).toEqual([false, true, true, 8]);
    // A reweigh past the bound evicts the oldest, which may be the entry itself.
    expect(lru.reweigh('b', 9)).toBe(true);
    expect([lru.has('b'), lru.has('c'), lru.weight]).toEqual([false, true, 6]);
    expect(() => lru.reweigh('c', -1)).toThrow(RangeError);
  });

  it('does not keep an entry heavier than the whole bound', () => {
    const lru = new LruMap<string, string>({ capacity: 100, maxWeight: 10 });
    lru.set('a', 'A', 3).set('huge', 'H', 11);
    expect([lru.has('huge'), lru.has('a'), lru.size, lru.weight]).toEqual([false, false, 0, 0]);
  });

  it('a lowered bound evicts at once', () => {
    const lru = new LruMap<string, string>({ capacity: 100, maxWeight: 10 });
    lru.set('a', 'A', 4).set('b', 'B', 4);
    lru.maxWeight = 5;
    expect([lru.has('a'), lru.has('b'), lru.weight, lru.evictions]).toEqual([false, true, 4, 1]);
  });

  it('refuses a negative or non-finite weight', () => {
    const lru = new LruMap<string, string>({ capacity: 2, maxWeight: 10 });
    expect(() => lru.set('a', 'A', -1)).toThrow(RangeError);
    expect(() => lru.set('a', 'A', Number.NaN)).toThrow(RangeError);
    expect(() => new LruMap({ capacity: 2, maxWeight: -1 })).toThrow(RangeError);
  });
});
