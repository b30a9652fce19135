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
