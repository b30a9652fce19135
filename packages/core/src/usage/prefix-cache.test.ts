import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { CharTokenizer } from '../../test/char-tokenizer.js';
import { testPolicy } from '../../test/policy.js';
import { Simulation } from '../simulation/simulation.js';
import type { SummaryEvent } from '../simulation/simulation-events.js';
import { PrefixCacheMeter, servedByCache } from './prefix-cache.js';

describe('servedByCache (OpenAI’s rule)', () => {
  it('serves nothing under 1,024 tokens, then the shared prefix in 128-token steps', () => {
    expect(servedByCache(1_000, 1_000)).toBe(0);
    expect(servedByCache(1_100, 1_200)).toBe(1_024);
    expect(servedByCache(5_000, 3_000)).toBe(2_944);
    expect(servedByCache(1_000, 30_000)).toBe(0);
  });

  test.prop([fc.nat(200_000), fc.nat(200_000)])(
    'never serves more than it shares or than is sent',
    (shared, prompt) => {
      const cached = servedByCache(shared, prompt);
      expect(cached).toBeLessThanOrEqual(Math.min(shared, prompt));
      expect(cached % 128).toBe(0);
      expect(cached === 0 || cached >= 1_024).toBe(true);
    },
  );
});

describe('PrefixCacheMeter', () => {
  it('serves the whole previous prompt of a growing one, and counts what a break cost by its cause', () => {
    const meter = new PrefixCacheMeter();
    expect(meter.prompt(10_000)).toBe(0);
    expect(meter.prompt(10_100)).toBe(9_984);
    meter.broke(6_000, 'microcompaction');
    meter.broke(2_000, 'splice');
    expect(meter.prompt(7_000)).toBe(1_920);
    expect(meter.totals()).toEqual({
      prompts: 3,
      promptTokens: 27_100,
      cachedTokens: 11_904,
      coldPrompts: 0,
      missedBy: { splice: 6_912 - 1_920, truncation: 0, microcompaction: 0, expiry: 0 },
    });
  });

  it('forgets a prefix unused for longer than its lifetime: the next prompt is cold, paid in full', () => {
    const meter = new PrefixCacheMeter({ ttlMs: 300_000 });
    expect(meter.prompt(10_000, 0)).toBe(0);
    // Within five minutes of the last use, however long the channel has lived.
    expect(meter.prompt(10_100, 300_000)).toBe(9_984);
    expect(meter.prompt(10_200, 599_000)).toBe(9_984 + 128 - 128);
    // Silent for longer: nothing is served, and the expiry is what cost it (not the splice meanwhile).
    meter.broke(2_000, 'splice');
    expect(meter.prompt(10_300, 900_000)).toBe(0);
    expect(meter.totals()).toMatchObject({
      prompts: 4,
      coldPrompts: 1,
      missedBy: { expiry: 10_112, splice: 0 },
    });
  });

  test.prop([
    fc.array(fc.record({ tokens: fc.nat(20_000), gap: fc.nat(1_000_000) }), { maxLength: 40 }),
    fc.nat(600_000),
  ])(
    'never serves more with a lifetime than without one, and serves nothing after a longer silence',
    (prompts, ttlMs) => {
      const forever = new PrefixCacheMeter();
      const expiring = new PrefixCacheMeter({ ttlMs });
      let at = 0;
      prompts.forEach(({ tokens, gap }, i) => {
        at += gap;
        const always = forever.prompt(tokens, at);
        const served = expiring.prompt(tokens, at);
        expect(served).toBeLessThanOrEqual(always);
        if (i > 0 && gap > ttlMs) expect(served).toBe(0);
        if (gap <= ttlMs) expect(served).toBe(always);
      });
    },
  );
});

describe('Simulation’s reply prompts', () => {
  const run = (messages: number, clock: { gapMs?: number; ttlSeconds?: number } = {}): SummaryEvent => {
    const sim = new Simulation({
      ...(clock.ttlSeconds === undefined ? {} : { cacheTtlSeconds: clock.ttlSeconds }),
      policy: testPolicy({ protectRecent: 4, summaryMaxTokens: 200, cooldownMs: 0, messageMaxTokens: 2_000 }),
      contextWindow: 8_000,
      maxOutputTokens: 500,
      reservedTokens: 600,
      promptHeadTokens: 300,
      tokenizer: new CharTokenizer(),
      jobLatency: 2,
      emit: () => {},
    });
    for (let i = 0; i < messages; i++) {
      sim.turn({
        role: i % 4 === 3 ? 'assistant' : 'user',
        author: `p${i % 3}`,
        text: `${i} ${'w'.repeat(120)}`,
        ...(clock.gapMs === undefined
          ? {}
          : { ts: new Date(Date.UTC(2026, 0, 1) + i * clock.gapMs).toISOString() }),
      });
    }
    return sim.finish();
  };

  it('sends one prompt per participant’s message, cacheable but for what the passes changed', () => {
    const s = run(800);
    const c = s.promptCache;
    expect(c.prompts).toBe(600);
    expect(s.tiers.background + s.tiers.aggressive).toBeGreaterThan(0);
    expect(c.missedBy.splice).toBeGreaterThan(0);
    expect(c.missedBy.truncation).toBe(0);
    expect(c.cachedTokens).toBeLessThan(c.promptTokens);
    // Between passes the prompt only grows: most of it is served.
    expect(c.cachedTokens / c.promptTokens).toBeGreaterThan(0.8);
  });

  it('counts a reply after a silence longer than the cache lifetime as cold, on the transcript clock', () => {
    // A message every 2 minutes: a participant's message every 2 to 4 minutes (every fourth is the bot's).
    expect(run(400, { gapMs: 120_000, ttlSeconds: 300 }).promptCache.coldPrompts).toBe(0);
    const quiet = run(400, { gapMs: 120_000, ttlSeconds: 200 });
    const busy = run(400, { gapMs: 120_000 });
    // Replies 4 minutes apart (after the bot's own message) find the cache gone; 2 minutes apart not.
    expect(quiet.promptCache.coldPrompts).toBe(99);
    expect(quiet.promptCache.missedBy.expiry).toBeGreaterThan(0);
    expect(quiet.promptCache.cachedTokens).toBeLessThan(busy.promptCache.cachedTokens);
    expect(busy.promptCache.coldPrompts).toBe(0);
  });
});
