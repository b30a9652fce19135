/**
 * The model-call metrics (`ebb_llm_*`): calls, tokens and errors by purpose, and their cost at the
 * `[prices]` of config.toml. `createMetrics` registers them and feeds them the `LlmCall`s of a pass
 * or a reply. Prices are read at each call so a reloaded config applies; a call of a model they do
 * not price counts as unpriced rather than as free.
 */
import { costUsd, type LlmCall, type ModelPrice, priceOf } from '@ebb/core';
import { Counter, type Registry } from 'prom-client';
import { boundedLabel, count } from './metric-values.js';

/** USD per million tokens by model name: the shape of config.toml's `[prices]`. */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

export type LlmPurpose = LlmCall['purpose'];

const PURPOSES = ['reply', 'summary', 'merge'] as const satisfies readonly LlmPurpose[];

/** Registers the `ebb_llm_*` series in `registers`; the recorder it returns counts a batch of calls. */
export function llmMetrics(
  registers: Registry[],
  prices: () => PriceTable,
): (calls: readonly LlmCall[]) => void {
  const llmCalls = new Counter({
    name: 'ebb_llm_calls_total',
    help: 'Model calls by purpose (reply, summary, merge) and outcome (ok, error: failed after its retries).',
    labelNames: ['purpose', 'outcome'] as const,
    registers,
  });
  const llmTokens = new Counter({
    name: 'ebb_llm_tokens_total',
    help: 'Tokens of model calls by purpose and direction (input: the prompt, output: the completion).',
    labelNames: ['purpose', 'direction'] as const,
    registers,
  });
  const promptTokens = new Counter({
    name: 'ebb_llm_prompt_tokens_total',
    help: 'Prompt tokens of model calls by purpose and whether the provider served them from its prompt cache (cached="true"), as each response reports.',
    labelNames: ['purpose', 'cached'] as const,
    registers,
  });
  const llmCost = new Counter({
    name: 'ebb_llm_cost_usd_total',
    help: 'Cost of model calls in USD at the [prices] of config.toml, by purpose (calls of an unpriced model add nothing).',
    labelNames: ['purpose'] as const,
    registers,
  });
  const llmUnpriced = new Counter({
    name: 'ebb_llm_unpriced_calls_total',
    help: 'Model calls of a model config.toml has no [prices."<model>"] for, by purpose: their cost is missing from ebb_llm_cost_usd_total.',
    labelNames: ['purpose'] as const,
    registers,
  });
  const llmErrors = new Counter({
    name: 'ebb_llm_errors_total',
    help: 'Failed tries of model calls, retried or not (a 429 storm counts every 429), by purpose and error code.',
    labelNames: ['purpose', 'code'] as const,
    registers,
  });

  // Every bounded label combination exists from the start, so rate() sees the first increment.
  for (const purpose of PURPOSES) {
    for (const outcome of ['ok', 'error'] as const) llmCalls.inc({ purpose, outcome }, 0);
    for (const direction of ['input', 'output'] as const) llmTokens.inc({ purpose, direction }, 0);
    for (const cached of ['true', 'false'] as const) promptTokens.inc({ purpose, cached }, 0);
    llmCost.inc({ purpose }, 0);
    llmUnpriced.inc({ purpose }, 0);
  }

  return (calls) => {
    const table = prices();
    for (const call of calls) {
      const { purpose } = call;
      llmCalls.inc({ purpose, outcome: call.error === undefined ? 'ok' : 'error' });
      llmTokens.inc({ purpose, direction: 'input' }, count(call.inputTokens));
      llmTokens.inc({ purpose, direction: 'output' }, count(call.outputTokens));
      const input = count(call.inputTokens);
      const cached = Math.min(input, count(call.cachedInputTokens ?? 0));
      promptTokens.inc({ purpose, cached: 'true' }, cached);
      promptTokens.inc({ purpose, cached: 'false' }, input - cached);
      const price = priceOf(table, call.model);
      if (price === undefined) llmUnpriced.inc({ purpose });
      else
        llmCost.inc({ purpose }, count(costUsd({ input, cached, output: count(call.outputTokens) }, price)));
      // Calls that do not report their tries (the chat model) count their final error.
      const failed = call.failedTries ?? (call.error === undefined ? [] : [call.error]);
      for (const code of failed) llmErrors.inc({ purpose, code: boundedLabel(code) });
    }
  };
}
