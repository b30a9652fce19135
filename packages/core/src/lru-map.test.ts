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
