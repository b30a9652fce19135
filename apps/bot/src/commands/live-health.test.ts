import { describe, expect, it } from 'vitest';
import { formatContextCache } from './live-health.js';

const stats = {
  hits: 2_970,
  misses: 30,
  reloads: 0,
  deltaLoads: 0,
  appendsHeard: 0,
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
    expect(formatContextCache({ ...stats, appendsHeard: 5_400, deltaLoads: 1_800, reloads: 12 })[1]).toMatch(
      /; 0 evicted; caught up 5,400 times by appends heard, 1,800 by delta, 12 by reload$/,
    );
    // A bot of an earlier version, whose /healthz has no appends heard.
    const { appendsHeard: _absent, ...earlier } = stats;
    expect(formatContextCache({ ...earlier, deltaLoads: 3 } as typeof stats)[1]).toMatch(
      /caught up 0 times by appends heard, 3 by delta, 0 by reload$/,
    );
  });

  it('says when the running bot cannot be asked', () => {
    expect(formatContextCache(null)[1]).toMatch(/^Context cache: unknown/);
  });
});
