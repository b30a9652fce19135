import type { LlmCall } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { samples, value } from '../test/exposition.js';
import { CALLS } from '../test/llm-calls.js';
import { createMetrics } from './metrics.js';

/** The recorder as the bot and the worker feed it, without prices unless a test gives some. */
function fedMetrics() {
  const metrics = createMetrics({ processMetrics: false });
  metrics.onLlmCalls(CALLS);
  return metrics;
}

describe('LLM metrics', () => {
  it('counts LLM calls, tokens and errors by purpose', async () => {
    const text = await fedMetrics().metricsText();
    expect(value(text, 'ebb_llm_calls_total', { purpose: 'summary', outcome: 'ok' })).toBe(3);
    expect(value(text, 'ebb_llm_calls_total', { purpose: 'summary', outcome: 'error' })).toBe(1);
    expect(value(text, 'ebb_llm_calls_total', { purpose: 'merge', outcome: 'ok' })).toBe(1);
    expect(value(text, 'ebb_llm_calls_total', { purpose: 'reply', outcome: 'ok' })).toBe(1);
    expect(value(text, 'ebb_llm_tokens_total', { purpose: 'summary', direction: 'input' })).toBe(78_000);
    expect(value(text, 'ebb_llm_tokens_total', { purpose: 'summary', direction: 'output' })).toBe(1_750);
    expect(value(text, 'ebb_llm_tokens_total', { purpose: 'merge', direction: 'output' })).toBe(700);
    expect(value(text, 'ebb_llm_tokens_total', { purpose: 'reply', direction: 'input' })).toBe(5_000);
    // Every failed try, the ones a retry hid included.
    expect(samples(text, 'ebb_llm_errors_total')).toEqual([
      { name: 'ebb_llm_errors_total', labels: { purpose: 'summary', code: 'llm_server' }, value: 2 },
      { name: 'ebb_llm_errors_total', labels: { purpose: 'summary', code: 'llm_rate_limited' }, value: 3 },
    ]);
  });

  it('splits prompt tokens by whether the provider cached them, and prices cached ones at cached_input_per_mtok', async () => {
    const metrics = createMetrics({
      processMetrics: false,
      prices: () => ({
        'gpt-5.4-mini': { input_per_mtok: 0.75, cached_input_per_mtok: 0.075, output_per_mtok: 4.5 },
      }),
    });
    metrics.onLlmCalls([
      {
        purpose: 'reply',
        model: 'gpt-5.4-mini',
        inputTokens: 30_000,
        cachedInputTokens: 28_160,
        outputTokens: 100,
        durationMs: 900,
        attempts: 1,
      },
    ]);
    const text = await metrics.metricsText();
    expect(value(text, 'ebb_llm_prompt_tokens_total', { purpose: 'reply', cached: 'true' })).toBe(28_160);
    expect(value(text, 'ebb_llm_prompt_tokens_total', { purpose: 'reply', cached: 'false' })).toBe(1_840);
    expect(value(text, 'ebb_llm_cost_usd_total', { purpose: 'reply' })).toBeCloseTo(
      (1_840 * 0.75 + 28_160 * 0.075 + 100 * 4.5) / 1_000_000,
      12,
    );
  });

  it('prices calls at [prices], per model and read at each call, and counts the unpriced ones', async () => {
    let prices: Record<string, { input_per_mtok: number; output_per_mtok: number }> = {
      'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6 },
    };
    const metrics = createMetrics({ processMetrics: false, prices: () => prices });
    metrics.onLlmCalls(CALLS);
    // A model the file does not price, then a reload that prices it.
    const local: LlmCall = {
      purpose: 'reply',
      model: 'llama3.1:8b',
      inputTokens: 40_000,
      outputTokens: 900,
      durationMs: 2_000,
      attempts: 1,
    };
    metrics.onLlmCalls([local, { ...local, model: 'constructor' }]);
    prices = { ...prices, 'llama3.1:8b': { input_per_mtok: 1, output_per_mtok: 2 } };
    metrics.onLlmCalls([local]);
    const text = await metrics.metricsText();
    const cost = (purpose: string) => value(text, 'ebb_llm_cost_usd_total', { purpose });
    // 78,000 in and 1,750 out at 0.15 and 0.60 per million; the failed calls cost nothing.
    expect(cost('summary')).toBeCloseTo((78_000 * 0.15 + 1_750 * 0.6) / 1e6, 12);
    expect(cost('merge')).toBeCloseTo((1_800 * 0.15 + 700 * 0.6) / 1e6, 12);
    expect(cost('reply')).toBeCloseTo((5_000 * 0.15 + 120 * 0.6 + 40_000 * 1 + 900 * 2) / 1e6, 12);
    expect(value(text, 'ebb_llm_unpriced_calls_total', { purpose: 'reply' })).toBe(2);
    expect(value(text, 'ebb_llm_unpriced_calls_total', { purpose: 'summary' })).toBe(0);
  });

  it('without prices, counts every call as unpriced and no cost', async () => {
    const text = await fedMetrics().metricsText();
    expect(value(text, 'ebb_llm_cost_usd_total', { purpose: 'summary' })).toBe(0);
    expect(value(text, 'ebb_llm_unpriced_calls_total', { purpose: 'summary' })).toBe(4);
  });
});
