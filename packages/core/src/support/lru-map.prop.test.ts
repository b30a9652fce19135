/**
 * LruMap against a model: an array in recency order (oldest first) that drops its head while it is
 * over the count or the weight bound. After any sequence of sets, gets, deletes and bound changes the
 * map holds exactly the model's keys, its weight is theirs, and it never holds more than the bounds.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { LruMap } from './lru-map.js';

const KEYS = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
const key = fc.constantFrom(...KEYS);
const op = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key, weight: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant('get' as const), key }),
  fc.record({ kind: fc.constant('delete' as const), key }),
  fc.record({ kind: fc.constant('bound' as const), maxWeight: fc.integer({ min: 0, max: 120 }) }),
);

test.prop([
  fc.integer({ min: 1, max: 6 }),
  fc.integer({ min: 0, max: 120 }),
  fc.array(op, { maxLength: 80 }),
])('holds what a recency list trimmed to both bounds holds', (capacity, initialMaxWeight, ops) => {
  const lru = new LruMap<string, number>({ capacity, maxWeight: initialMaxWeight });
  let maxWeight = initialMaxWeight;
  let model: { key: string; weight: number }[] = [];
  let evictions = 0;
  const total = () => model.reduce((sum, entry) => sum + entry.weight, 0);
  const trim = () => {
    while (model.length > capacity || total() > maxWeight) {
      model.shift();
      evictions += 1;
    }
  };
  for (const o of ops) {
    if (o.kind === 'set') {
      lru.set(o.key, o.weight, o.weight);
      model = model.filter((entry) => entry.key !== o.key);
      model.push({ key: o.key, weight: o.weight });
      trim();
    } else if (o.kind === 'get') {
      const entry = model.find((e) => e.key === o.key);
      expect(lru.get(o.key)).toBe(entry?.weight);
      if (entry) model = [...model.filter((e) => e !== entry), entry];
    } else if (o.kind === 'delete') {
      expect(lru.delete(o.key)).toBe(model.some((e) => e.key === o.key));
      model = model.filter((entry) => entry.key !== o.key);
    } else {
      maxWeight = o.maxWeight;
      lru.maxWeight = o.maxWeight;
      trim();
    }
    expect(KEYS.filter((k) => lru.has(k))).toEqual(KEYS.filter((k) => model.some((e) => e.key === k)));
    expect([lru.size, lru.weight, lru.evictions]).toEqual([model.length, total(), evictions]);
    expect(lru.size).toBeLessThanOrEqual(capacity);
    expect(lru.weight).toBeLessThanOrEqual(maxWeight);
  }
});
