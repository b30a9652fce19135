/**
 * The dashboard's suggestion on the bot's stores (in memory here): the same answer as
 * `ebb simulate --from-archive KEY --suggest --json`, served from a cache until it is stale.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@ebb/config';
import { InMemoryChannelStore, InMemoryRunStore } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { BURSTY_CONFIG, BURSTY_PASS_MS, burstyTraffic, recordPasses } from '../test/bursty-traffic.js';
import { ChannelSuggestions } from './dashboard-suggestion.js';

async function stores() {
  let now = Date.parse('2026-11-27T10:00:00Z');
  const channels = new InMemoryChannelStore();
  const runs = new InMemoryRunStore({ now: () => now });
  const traffic = burstyTraffic();
  for (let i = 0; i < traffic.length; i += 400)
    await channels.appendAll('web:bursty', traffic.slice(i, i + 400));
  for (let i = 0; i < 30; i++)
    await channels.append('web:quiet', {
      role: 'user',
      author: 'ana',
      text: `hello ${i}`,
      tokens: 0,
      contextTokens: 0,
    });
  await recordPasses(runs, 'web:bursty', BURSTY_PASS_MS);
  // Candidates are checked against the file the config was read from.
  const file = join(mkdtempSync(join(tmpdir(), 'ebb-suggestion-')), 'config.toml');
  writeFileSync(file, BURSTY_CONFIG);
  const config = await loadConfig({ path: file });
  const suggestions = new ChannelSuggestions({
    config: () => config,
    channels,
    runs,
    now: () => now,
  });
  return { suggestions, advance: (ms: number) => (now += ms) };
}

describe('ChannelSuggestions', () => {
  it('suggests settings with 0 emergencies for a bursty channel, and serves them from its cache', async () => {
    const { suggestions, advance } = await stores();
    const first = await suggestions.suggestion('web:bursty');
    expect(first?.status).toBe('suggested');
    if (first?.status !== 'suggested') return;
    expect(first.passSeconds).toMatchObject({ source: 'recorded', runs: 10, replayed: 7.3 });
    expect(first.current.emergencies).toBeGreaterThan(0);
    expect(first.suggested?.outcome.emergencies).toBe(0);
    expect(first.block).toMatch(/^\[channels\."web:bursty"\.compaction\]\n/);
    advance(60_000);
    expect((await suggestions.suggestion('web:bursty'))?.computedAt).toBe(first.computedAt);
  }, 60_000);

  it('says when a channel has too little history, and knows no unknown channel', async () => {
    const { suggestions } = await stores();
    expect(await suggestions.suggestion('web:quiet')).toMatchObject({
      status: 'too_little_history',
      messages: 30,
    });
    expect(await suggestions.suggestion('web:nobody')).toBeUndefined();
  });
});
