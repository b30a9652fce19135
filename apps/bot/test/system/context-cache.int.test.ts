/**
 * The bot's working-context cache under a budget too small for its channels, end to end: the web API,
 * the bot, Postgres and the fake OpenAI server. Channels of long messages push each other out, the
 * cache stays within `[bot] context_cache_mb`, an evicted channel's next turn still sees its whole
 * context (loaded again), and `/healthz`, `/metrics` and `ebb status` report the same counts.
 */
import { parseConfig } from '@ebb/config';
import { describe, expect } from 'vitest';
import { formatContextCache, readLiveHealth } from '../../src/commands/live-health.js';
import { ebbWorld } from '../ebb-world.js';
import { FULL_SPEED_WEB } from '../small-window.js';

const CHANNELS = 12;
/**
 * Three of these and the replies make a channel of about 136 KB in the cache's estimate: seven fit in
 * 1 MiB, twelve do not.
 */
const LONG = (channel: number, round: number) =>
  `channel ${channel} round ${round} marker-${channel}-${round}: ${'deploy log line with a build number 1234; '.repeat(500)}`;

const it = ebbWorld({
  config: (url) =>
    parseConfig(
      [
        '[llm]',
        `base_url = "${url}"`,
        '[bot]',
        'context_cache_mb = 1',
        '[web.bot]',
        'respond_to = "all"',
        ...FULL_SPEED_WEB,
      ].join('\n'),
      'cache.toml',
    ),
  script: (fake) => fake.reply(() => ({ content: 'noted' })),
});

describe('a context cache smaller than its channels', () => {
  it('stays within its budget, reloads what it evicted, and reports the same counts everywhere', async ({
    fake,
    ebb,
    web,
  }) => {
    for (let round = 1; round <= 3; round++) {
      for (let channel = 1; channel <= CHANNELS; channel++)
        await web.post(`cache-${channel}`, LONG(channel, round));
    }

    const live = await readLiveHealth(
      parseConfig(`[web]\nport = ${new URL(ebb.web.url).port}`, 'probe.toml'),
    );
    const cache = live?.contextCache;
    if (!cache) throw new Error(`no contextCache in /healthz: ${JSON.stringify(live)}`);
    expect(cache.budgetBytes).toBe(2 ** 20);
    expect(cache.bytes).toBeLessThanOrEqual(cache.budgetBytes);
    expect(cache.channels).toBeLessThan(CHANNELS);
    expect(cache.evictions).toBeGreaterThan(0);
    // Every turn looked its channel up once: the first of each channel missed, and so did a turn
    // whose channel had been pushed out since.
    expect(cache.hits + cache.misses).toBe(3 * CHANNELS);
    expect(cache.misses).toBeGreaterThan(CHANNELS);

    // An evicted channel's turn, loaded again, still sends the model its whole conversation.
    const lastPrompt = JSON.stringify(fake.completionRequests.at(-1)?.body);
    for (let round = 1; round <= 3; round++) expect(lastPrompt).toContain(`marker-${CHANNELS}-${round}`);
    const firstChannelTurn = fake.completionRequests.find((r) =>
      JSON.stringify(r.body).includes('marker-1-3'),
    );
    for (const round of [1, 2]) expect(JSON.stringify(firstChannelTurn?.body)).toContain(`marker-1-${round}`);

    const metrics = await (await fetch(`${ebb.web.url}/metrics`)).text();
    expect(metrics).toContain(`ebb_context_cache_misses_total ${cache.misses}`);
    expect(metrics).toContain(`ebb_context_cache_evictions_total ${cache.evictions}`);
    expect(metrics).toContain('ebb_context_cache_budget_bytes 1048576');

    const [, line] = formatContextCache(cache);
    expect(line).toContain(`${cache.channels} channels`);
    expect(line).toContain('of 1.0 MiB ([bot] context_cache_mb)');
    expect(line).toContain(`${cache.evictions} evicted`);
  });
});
