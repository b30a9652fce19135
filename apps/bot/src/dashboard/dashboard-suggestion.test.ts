/**
 * The dashboard's suggestion on the bot's stores (in memory here): the same answer as
 * `ebb simulate --from-archive KEY --suggest --json`, served from a cache until it is stale.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@ebb/config';
import { InMemoryChannelStore, InMemoryRunStore } from '@ebb/core/testing';
import { describe, expect, it } from 'vitest';
import {
  BURSTY_CONFIG,
  BURSTY_PASS_MS,
  burstyTraffic,
  recordPasses,
  sayHello,
} from '../../test/bursty-traffic.js';
import { ChannelSuggestions } from './dashboard-suggestion.js';

async function stores(options: { readonly failReads?: number } = {}) {
  let now = Date.parse('2026-11-27T10:00:00Z');
  const channels = new InMemoryChannelStore();
  const runs = new InMemoryRunStore({ now: () => now });
  const traffic = burstyTraffic();
  for (let i = 0; i < traffic.length; i += 400)
    await channels.appendAll('web:bursty', traffic.slice(i, i + 400));
  await sayHello(channels, 'web:quiet', 30);
  await recordPasses(runs, 'web:bursty', BURSTY_PASS_MS);
  // A channel the bot knows before anything is archived in it.
  await channels.setCalibration('web:new', { factor: 1, samples: 0 });
  // Candidates are checked against the file the config was read from.
  const file = join(mkdtempSync(join(tmpdir(), 'ebb-suggestion-')), 'config.toml');
  writeFileSync(file, BURSTY_CONFIG);
  const config = await loadConfig({ path: file });
  // The archive read fails the first `failReads` times, as a dropped database connection would.
  let failReads = options.failReads ?? 0;
  const suggestions = new ChannelSuggestions({
    config: () => config,
    channels: {
      channelSummary: (key) => channels.channelSummary(key),
      readArchive: (key, fromSeq, toSeq) =>
        failReads-- > 0
          ? Promise.reject(new Error('connection terminated'))
          : channels.readArchive(key, fromSeq, toSeq),
    },
    runs,
    now: () => now,
  });
  return { suggestions, channels, advance: (ms: number) => (now += ms) };
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

  it('serves "too little history" from its cache only while the channel still has fewer messages than it needs', async () => {
    const { suggestions, channels, advance } = await stores();
    const first = await suggestions.suggestion('web:quiet');
    if (first?.status !== 'too_little_history')
      throw new Error(`expected too little history, got ${first?.status}`);
    expect(first.neededMessages).toBeGreaterThan(31);
    // One message short of what it needs: the cached answer, with its count from then.
    advance(60_000);
    await sayHello(channels, 'web:quiet', first.neededMessages - first.messages - 1);
    expect(await suggestions.suggestion('web:quiet')).toEqual(first);
    // At what it needs, within the 10 minutes: computed again from the messages archived now.
    advance(60_000);
    await sayHello(channels, 'web:quiet', 1);
    const again = await suggestions.suggestion('web:quiet');
    expect(again?.computedAt).not.toBe(first.computedAt);
    expect(again).toMatchObject({ messages: first.neededMessages });
  }, 60_000);

  it('serves "nothing archived" from its cache only until the first message is', async () => {
    const { suggestions, channels, advance } = await stores();
    const empty = await suggestions.suggestion('web:new');
    expect(empty).toMatchObject({ status: 'no_history' });
    advance(60_000);
    expect(await suggestions.suggestion('web:new')).toEqual(empty);
    await sayHello(channels, 'web:new', 1);
    expect(await suggestions.suggestion('web:new')).toMatchObject({
      status: 'too_little_history',
      messages: 1,
    });
  });

  it('keeps no failed computation: the next request computes again, and other channels are not held up', async () => {
    const { suggestions } = await stores({ failReads: 1 });
    await expect(suggestions.suggestion('web:quiet')).rejects.toThrow('connection terminated');
    expect(await suggestions.suggestion('web:new')).toMatchObject({ status: 'no_history' });
    expect(await suggestions.suggestion('web:quiet')).toMatchObject({
      status: 'too_little_history',
      messages: 30,
    });
  });
});
