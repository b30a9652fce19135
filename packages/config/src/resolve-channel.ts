import {
  type BudgetSettings,
  type CacheRetention,
  type CompactionPolicy,
  type ModelPrice,
  priceOf,
  type RequestSettings,
  type TokenizerEncoding,
} from '@ebb/core';
import { layerLabel, layersForKey } from './channel-layers.js';
import { type ON_DELETE, type ON_EDIT, SECTIONS } from './config-schema.js';
import { deepFreeze } from './deep-freeze.js';
import type { EbbConfig } from './ebb-config.js';
import {
  type EffectiveSettings,
  LEAF_KEYS,
  type LeafKey,
  leafValue,
  mergeSettings,
  splitLeaf,
} from './merge-settings.js';
import { formatTomlPath } from './toml-path.js';

/** Everything one channel runs with, after precedence is applied. */
export interface ResolvedChannelConfig {
  readonly channelKey: string;
  readonly llm: {
    readonly model: string;
    readonly contextWindow: number;
    readonly maxOutputTokens: number;
    readonly baseUrl: string | undefined;
    readonly encoding: TokenizerEncoding;
    /** How requests are shaped: token limit name, prompt cache key and retention, temperature, reasoning effort. */
    readonly request: RequestSettings;
    /** `[prices."<model>"]`, if the file prices the chat model. */
    readonly price: ModelPrice | undefined;
    /** `cache_ttl_seconds`, or the provider's documented lifetime for the settings (`cacheTtlSeconds`). */
    readonly cacheTtlSeconds: number;
  };
  readonly compaction: CompactionPolicy & { readonly summarizerModel: string };
  readonly memory: { readonly scope: 'channel' | 'workspace'; readonly recallMaxTokens: number };
  readonly bot: { readonly systemPrompt: string; readonly respondTo: 'mentions' | 'all' };
  /** What the model may call here (`[tools]`): allow patterns, model calls per turn, bound on one call. */
  readonly tools: {
    readonly allow: readonly string[];
    readonly maxSteps: number;
    readonly callTimeoutMs: number;
  };
  /** What a deletion or an edit on the platform does here (`[privacy]`). */
  readonly privacy: {
    readonly onDelete: (typeof ON_DELETE)[number];
    /** `retain_days`: messages older than this are taken back by the retention sweep; absent: kept for ever. */
    readonly retainDays?: number;
    readonly onEdit: (typeof ON_EDIT)[number];
  };
  /** The spend limits (`[budget]`), in USD; `limited` when any is set. */
  readonly budget: BudgetSettings & { readonly limited: boolean };
  /** `[prices."<summarizer model>"]`, if the file prices that model. */
  readonly price: ModelPrice | undefined;
  /** For every TOML leaf (`compaction.background_threshold`), where its value came from: `default`, `[compaction]`, `[slack]`, `[channels."slack:*"]`. */
  readonly sources: Readonly<Record<LeafKey, string>>;
}

function retentionSetting(retention: CacheRetention | 'none'): { promptCacheRetention?: CacheRetention } {
  return retention === 'none' ? {} : { promptCacheRetention: retention };
}

/**
 * The settings of one channel key (`slack:T1:C1`, `slack:T1:C1:1700000000.1234`, `discord:G:C`,
 * `web:abc`, or `defaults` for the top-level sections alone). Pure: the config was validated at load.
 */
export function resolveChannel(config: EbbConfig, channelKey: string): ResolvedChannelConfig {
  const layers = layersForKey(config, channelKey);
  const { settings, origin } = mergeSettings(layers.map((layer) => layer.settings));
  const { llm, compaction, memory, bot, tools, privacy, budget } = settings;
  const price = priceOf(config.prices, compaction.summarizer_model);
  const sources = Object.fromEntries(
    LEAF_KEYS.map((leaf) => [leaf, layerLabel(layers[origin[leaf]]?.source, splitLeaf(leaf)[0])]),
  ) as Record<LeafKey, string>;
  return deepFreeze({
    channelKey,
    llm: {
      model: llm.model,
      contextWindow: llm.context_window,
      maxOutputTokens: llm.max_output_tokens,
      baseUrl: llm.base_url,
      encoding: llm.encoding,
      request: {
        tokenLimitParam: llm.token_limit_param,
        promptCacheKey: llm.prompt_cache_key,
        ...retentionSetting(llm.prompt_cache_retention),
        ...(llm.temperature === undefined ? {} : { temperature: llm.temperature }),
        ...(llm.reasoning_effort === undefined ? {} : { reasoningEffort: llm.reasoning_effort }),
      },
      price: priceOf(config.prices, llm.model),
      cacheTtlSeconds: llm.cache_ttl_seconds,
    },
    compaction: {
      backgroundThreshold: backgroundThresholdOf(compaction, llm),
      ...(worksBelowTheEdge(compaction, llm) ? { workingTokens: compaction.working_tokens } : {}),
      aggressiveThreshold: compaction.aggressive_threshold,
      emergencyThreshold: compaction.emergency_threshold,
      backgroundFraction: backgroundFractionOf(compaction, llm),
      aggressiveFraction: compaction.aggressive_fraction,
      emergencyFraction: compaction.emergency_fraction,
      protectRecent: compaction.protect_recent,
      summaryMaxTokens: compaction.summary_max_tokens,
      cooldownMs: Math.round(compaction.cooldown_seconds * 1000),
      maxIneffectivePasses: compaction.max_ineffective_passes,
      messageMaxTokens: compaction.message_max_tokens,
      summarizerModel: compaction.summarizer_model,
      microcompaction: compaction.microcompaction,
      microcompactThreshold: compaction.microcompact_threshold,
      keepToolResults: compaction.keep_tool_results,
      microcompactMinTokens: compaction.microcompact_min_tokens,
    },
    memory: { scope: memory.scope, recallMaxTokens: memory.recall_max_tokens },
    bot: { systemPrompt: bot.system_prompt, respondTo: bot.respond_to },
    tools: {
      allow: tools.allow,
      maxSteps: tools.max_steps,
      callTimeoutMs: Math.round(tools.call_timeout_seconds * 1000),
    },
    privacy: {
      onDelete: privacy.on_delete,
      onEdit: privacy.on_edit,
      ...(privacy.retain_days === undefined ? {} : { retainDays: privacy.retain_days }),
    },
    budget: budgetOf(budget),
    price,
    sources,
  });
}

/** `[budget]` as a channel runs with it. */
export function budgetOf(budget: EffectiveSettings['budget']): ResolvedChannelConfig['budget'] {
  const limits = {
    ...(budget.daily_usd === undefined ? {} : { dailyUsd: budget.daily_usd }),
    ...(budget.monthly_usd === undefined ? {} : { monthlyUsd: budget.monthly_usd }),
    ...(budget.workspace_daily_usd === undefined ? {} : { workspaceDailyUsd: budget.workspace_daily_usd }),
    ...(budget.workspace_monthly_usd === undefined
      ? {}
      : { workspaceMonthlyUsd: budget.workspace_monthly_usd }),
  };
  return {
    ...limits,
    over: budget.over,
    ...(budget.cheaper_model === undefined ? {} : { cheaperModel: budget.cheaper_model }),
    limited: Object.keys(limits).length > 0,
  };
}

/**
 * Where a background pass starts, as usage of the window less the reply's reserve: at
 * `background_threshold`, or earlier when `working_tokens` is reached first.
 */
export function backgroundThresholdOf(
  compaction: { readonly background_threshold: number; readonly working_tokens?: number | undefined },
  llm: { readonly context_window: number; readonly max_output_tokens: number },
): number {
  const working = compaction.working_tokens;
  if (working === undefined || working === 0) return compaction.background_threshold;
  return Math.min(compaction.background_threshold, working / (llm.context_window - llm.max_output_tokens));
}

/** Whether `working_tokens` sets the background threshold (it is reached before `background_threshold`). */
export function worksBelowTheEdge(
  compaction: { readonly background_threshold: number; readonly working_tokens?: number | undefined },
  llm: { readonly context_window: number; readonly max_output_tokens: number },
): boolean {
  return backgroundThresholdOf(compaction, llm) < compaction.background_threshold;
}

/**
 * The share of the context a background pass frees: `working_fraction` when `working_tokens` sets
 * the threshold, `background_fraction` at the window's edge.
 */
export function backgroundFractionOf(
  compaction: {
    readonly background_threshold: number;
    readonly working_tokens?: number | undefined;
    readonly background_fraction: number;
    readonly working_fraction: number;
  },
  llm: { readonly context_window: number; readonly max_output_tokens: number },
): number {
  return worksBelowTheEdge(compaction, llm) ? compaction.working_fraction : compaction.background_fraction;
}

/** One row of `ebb config check`: a TOML key, its resolved value and where that value came from. */
export interface ExplainedSetting {
  readonly key: string;
  readonly value: unknown;
  readonly source: string;
}

export interface ChannelExplanation {
  readonly channelKey: string;
  /** The places that apply, lowest precedence first, starting with `default`. */
  readonly layers: readonly string[];
  readonly settings: readonly ExplainedSetting[];
}

/** The resolution of one channel key as TOML keys and values, for operators. */
export function explainChannel(config: EbbConfig, channelKey: string): ChannelExplanation {
  const layers = layersForKey(config, channelKey);
  const { settings, origin } = mergeSettings(layers.map((layer) => layer.settings));
  const rows: ExplainedSetting[] = LEAF_KEYS.map((leaf) => {
    const [section] = splitLeaf(leaf);
    return {
      key: leaf,
      value: leafValue(settings, leaf),
      source: layerLabel(layers[origin[leaf]]?.source, section),
    };
  });
  for (const model of new Set([settings.llm.model, settings.compaction.summarizer_model])) {
    const price = priceOf(config.prices, model);
    if (price !== undefined) {
      rows.push({ key: formatTomlPath(['prices', model]), value: price, source: '[prices]' });
    }
  }
  const names = layers.flatMap(({ source, settings: layer }) => {
    const present = SECTIONS.filter((section) => layer[section] !== undefined);
    if (source.kind === 'channel') return [layerLabel(source, 'llm')];
    return source.kind === 'sections'
      ? present.map((section) => layerLabel(source, section))
      : present.length > 0
        ? [layerLabel(source, 'llm')]
        : [];
  });
  return deepFreeze({ channelKey, layers: ['default', ...names], settings: rows });
}

/**
 * Whether any layer sets `[privacy] retain_days` (the top level, a platform, a channel block): the
 * retention sweep has nothing to do otherwise.
 */
export function retentionConfigured(config: EbbConfig): boolean {
  const layers = [config.sections, config.slack, config.discord, config.web, ...config.channels];
  return layers.some(
    (layer) => (layer as { privacy?: { retain_days?: number } }).privacy?.retain_days !== undefined,
  );
}
