import { describe, expect, it } from 'vitest';
import { formatContextCache } from './live-health.js';

const stats = {
  hits: 2_970,
  misses: 30,
  reloads: 0,
  deltaLoads: 0,
  evictions: 0,
  channels: 200,
  bytes: 3 * 2 ** 20,
  budgetBytes: 512 * 2 ** 20,
};

describe("ebb status's context cache line", () => {
  it('says what the cache holds and how often turns hit it', () => {
    expect(formatContextCache(stats)).toEqual([
      '',
      'Context cache: 200 channels, 3.0 MiB of 512 MiB ([bot] context_cache_mb); 99.0% of 3,000 turns hit; 0 evicted',
    ]);
  });

  it("says how cached channels caught up with other replicas' writes, where any did", () => {
    expect(formatContextCache({ ...stats, deltaLoads: 1_800, reloads: 12 })[1]).toMatch(
      /; 0 evicted; caught up 1,800 times by delta, 12 by reload$/,
    );
  });

  it('says when the running bot cannot be asked', () => {
    expect(formatContextCache(null)[1]).toMatch(/^Context cache: unknown/);
  });
});
