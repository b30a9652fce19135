import { describe, expect, it } from 'vitest';
import { BoundedLru } from './bounded-lru.js';

describe('BoundedLru', () => {
  it('forgets the least recently used entry beyond its capacity', () => {
    const lru = new BoundedLru<string, number>(2);
    lru.set('a', 1).set('b', 2);
    lru.get('a');
    lru.set('c', 3);

    expect([lru.has('a'), lru.has('b'), lru.has('c')]).toEqual([true, false, true]);
    expect(lru.size).toBe(2);
  });

  it('refuses a capacity below one', () => {
    expect(() => new BoundedLru(0)).toThrow(RangeError);
  });
});
