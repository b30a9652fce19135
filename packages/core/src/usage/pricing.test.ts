import { expect, it } from 'vitest';
import type { LlmCall } from '../ports/model-ports.js';
import { callsCost, pricedCost } from './pricing.js';
import { channelCost } from './usage.js';

const prices = {
  'gpt-5.4-mini': { input_per_mtok: 0.75, cached_input_per_mtok: 0.075, output_per_mtok: 4.5 },
};

it('prices each model at its own price, and not at all when one model has none', () => {
  const mini = { model: 'gpt-5.4-mini', usage: { input: 1_000_000, cached: 800_000, output: 100_000 } };
  expect(pricedCost([mini], prices)).toEqual({ costUsd: 0.15 + 0.06 + 0.45, unpriced: [] });
  expect(pricedCost([mini, { model: 'local', usage: { input: 1, output: 1 } }], prices)).toEqual({
    costUsd: null,
    unpriced: ['local'],
  });
  expect(pricedCost([], prices)).toEqual({ costUsd: 0, unpriced: [] });
});

it('gives a pass and a channel the same cost for the same calls', () => {
  const calls: LlmCall[] = [
    {
      model: 'gpt-5.4-mini',
      purpose: 'summary',
      inputTokens: 40_000,
      cachedInputTokens: 30_000,
      outputTokens: 900,
      durationMs: 1,
      attempts: 1,
    },
  ];
  const row = {
    channelKey: 'web:1',
    purpose: 'summary',
    model: 'gpt-5.4-mini',
    calls: 1,
    promptTokens: 40_000,
    cachedTokens: 30_000,
    completionTokens: 900,
  } as const;
  expect(channelCost([row], prices).costUsd).toBe(callsCost(calls, prices).costUsd);
});

it('prices the replies per 1,000 and counts the share that found the cache cold', () => {
  const reply = { channelKey: 'web:1', purpose: 'reply', model: 'gpt-5.4-mini' } as const;
  const rows = [
    // Two hours of replies: 1,000 prompt tokens each, 8 of 10 replies warm.
    {
      ...reply,
      calls: 6,
      replies: 4,
      coldReplies: 1,
      promptTokens: 4_000,
      cachedTokens: 3_000,
      completionTokens: 0,
    },
    {
      ...reply,
      calls: 6,
      replies: 6,
      coldReplies: 1,
      promptTokens: 6_000,
      cachedTokens: 5_000,
      completionTokens: 0,
    },
    // A pass's calls cost the channel but are no reply.
    {
      ...reply,
      purpose: 'summary',
      calls: 1,
      promptTokens: 50_000,
      cachedTokens: 0,
      completionTokens: 1_000,
    },
  ] as const;
  const cost = channelCost(rows, prices);
  expect(cost.replies).toBe(10);
  expect(cost.coldReplyShare).toBeCloseTo(0.2);
  // 2,000 uncached at $0.75 and 8,000 cached at $0.075 per million, over 10 replies.
  expect(cost.usdPer1kReplies).toBeCloseTo((1000 * (0.0015 + 0.0006)) / 10);
  expect(channelCost(rows.slice(2), prices)).toMatchObject({
    replies: 0,
    coldReplyShare: null,
    usdPer1kReplies: null,
  });
});
