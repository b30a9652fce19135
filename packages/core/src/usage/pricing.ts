/**
 * What model calls cost, at the `[prices."<model>"]` of config.toml (USD per million tokens). The one
 * place a price is applied: metrics, `ebb status`, the dashboard and `ebb simulate` all call it.
 * Cached input is billed at `cached_input_per_mtok` (OpenAI: a tenth of the input price for the
 * GPT-5 family), or at the full input price when the table does not say.
 */
import type { LlmCall } from '../ports/model-ports.js';

/** One model's prices, as config.toml writes them. */
export interface ModelPrice {
  readonly input_per_mtok: number;
  readonly cached_input_per_mtok?: number | undefined;
  readonly output_per_mtok: number;
}

/** Tokens of one call or a sum of calls; `cached` is the part of `input` served from a prompt cache. */
export interface TokenUsage {
  readonly input: number;
  readonly cached?: number;
  readonly output: number;
}

export function costUsd(usage: TokenUsage, price: ModelPrice): number {
  const input = nonNegative(usage.input);
  const cached = Math.min(input, nonNegative(usage.cached ?? 0));
  const cachedPrice = price.cached_input_per_mtok ?? price.input_per_mtok;
  return (
    ((input - cached) * price.input_per_mtok +
      cached * cachedPrice +
      nonNegative(usage.output) * price.output_per_mtok) /
    1_000_000
  );
}

/** A model's price from a `[prices]` table (own keys only: a model named `constructor` is unpriced). */
export function priceOf(
  table: Readonly<Record<string, ModelPrice>>,
  model: string | undefined,
): ModelPrice | undefined {
  return model !== undefined && Object.hasOwn(table, model) ? table[model] : undefined;
}

/** Tokens of calls to one model. */
export interface ModelUsage {
  readonly model: string;
  readonly usage: TokenUsage;
}

/** What usages cost, each at its own model's price: the one sum over models. */
export interface PricedCost {
  /** USD; null when a model used has no price (a partial sum would mislead); 0 with no usage. */
  readonly costUsd: number | null;
  /** Models used with no `[prices."<model>"]`, sorted. */
  readonly unpriced: readonly string[];
}

export function pricedCost(
  usages: Iterable<ModelUsage>,
  table: Readonly<Record<string, ModelPrice>>,
): PricedCost {
  let cost = 0;
  const unpriced = new Set<string>();
  for (const { model, usage } of usages) {
    const price = priceOf(table, model);
    if (price === undefined) unpriced.add(model);
    else cost += costUsd(usage, price);
  }
  return { costUsd: unpriced.size > 0 ? null : cost, unpriced: [...unpriced].sort() };
}

function nonNegative(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** Model calls summed, and what they cost at `[prices]`, each call at its own model's price. */
export interface CallsCost {
  readonly inputTokens: number;
  /** The part of `inputTokens` the provider served from its prompt cache. */
  readonly cachedInputTokens: number;
  readonly outputTokens: number;
  /** USD; null when a model called has no price (a partial sum would mislead); 0 with no calls. */
  readonly costUsd: number | null;
}

export function callsCost(calls: readonly LlmCall[], table: Readonly<Record<string, ModelPrice>>): CallsCost {
  let inputTokens = 0;
  let cachedInputTokens = 0;
  let outputTokens = 0;
  const usages: ModelUsage[] = [];
  for (const call of calls) {
    const usage = { input: call.inputTokens, cached: call.cachedInputTokens ?? 0, output: call.outputTokens };
    inputTokens += nonNegative(usage.input);
    cachedInputTokens += Math.min(nonNegative(usage.input), nonNegative(usage.cached));
    outputTokens += nonNegative(usage.output);
    usages.push({ model: call.model, usage });
  }
  return { inputTokens, cachedInputTokens, outputTokens, costUsd: pricedCost(usages, table).costUsd };
}
