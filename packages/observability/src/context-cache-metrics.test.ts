/** The context cache's series: read from the bot's counts on every scrape, absent without a bot. */
import { describe, expect, it } from 'vitest';
import { value } from '../test/exposition.js';
import type { ContextCacheStats } from './context-cache-metrics.js';
import { createMetrics } from './metrics.js';

describe('context cache metrics', () => {
  it('reports the counts of the source at each scrape', async () => {
    const metrics = createMetrics({ processMetrics: false });
    let stats: ContextCacheStats = {
      hits: 90,
      misses: 10,
      reloads: 4,
      deltaLoads: 12,
      appendsHeard: 40,
      evictions: 3,
      channels: 7,
      bytes: 5_000,
      budgetBytes: 8_000,
    };
    metrics.observeContextCache(() => stats);
    let text = await metrics.metricsText();
    expect(
      [
        'hits_total',
        'misses_total',
        'reloads_total',
        'delta_loads_total',
        'appends_heard_total',
        'evictions_total',
        'channels',
        'bytes',
        'budget_bytes',
      ].map((name) => value(text, `ebb_context_cache_${name}`)),
    ).toEqual([90, 10, 4, 12, 40, 3, 7, 5_000, 8_000]);

    stats = { ...stats, hits: 95, channels: 6 };
    text = await metrics.metricsText();
    expect([value(text, 'ebb_context_cache_hits_total'), value(text, 'ebb_context_cache_channels')]).toEqual([
      95, 6,
    ]);
  });

  it('leaves the series out in a process without a bot', async () => {
    const text = await createMetrics({ processMetrics: false }).metricsText();
    expect(value(text, 'ebb_context_cache_hits_total')).toBeUndefined();
    expect(value(text, 'ebb_context_cache_bytes')).toBeUndefined();
  });
});
