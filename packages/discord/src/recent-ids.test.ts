import { describe, expect, it } from 'vitest';
import { RecentIds } from './recent-ids.js';

describe('RecentIds', () => {
  it('reports repeats and forgets the least recently seen beyond its capacity', () => {
    const ids = new RecentIds(2);
    expect(ids.remember('a')).toBe(true);
    expect(ids.remember('b')).toBe(true);
    expect(ids.remember('a')).toBe(false); // a is now the most recent
    expect(ids.remember('c')).toBe(true); // evicts b
    expect([ids.has('a'), ids.has('b'), ids.has('c'), ids.size]).toEqual([true, false, true, 2]);
  });

  it('refuses a capacity below one', () => {
    expect(() => new RecentIds(0)).toThrow(RangeError);
  });
});
