import {
  type CacheRetention,
  defaultMessageMaxTokens,
  defaultSummaryMaxTokens,
  encodingForModel,
  type TokenizerEncoding,
} from '@ebb/core';
import { defaultCacheRetention, defaultCacheTtlSeconds } from './cache-retention.js';
import {
  SECTION_KEYS,
  SECTIONS,
  type Section,
  type Settings,
  type SettingsLayer,
  settingsSchema,
} from './config-schema.js';
import { type DeepReadonly, deepFreeze } from './deep-freeze.js';

/** Every default of the overridable sections, straight from the schema. */
export const BUILT_IN_DEFAULTS: DeepReadonly<Settings> = deepFreeze(settingsSchema.parse({}));

/** A leaf of the overridable sections by its TOML key, e.g. `compaction.background_threshold`. */
export type LeafKey = { [S in Section]: `${S}.${keyof Settings[S] & string}` }[Section];

export const LEAF_KEYS: readonly LeafKey[] = SECTIONS.flatMap((section) =>
  SECTION_KEYS[section].map((key) => `${section}.${key}` as LeafKey),
);

/** Leaves whose default is computed from other settings after merging, and how. */
export const DERIVED_DEFAULTS: Readonly<Partial<Record<LeafKey, string>>> = {
  'llm.encoding': 'from llm.model',
  'llm.prompt_cache_retention': '"24h" for gpt-5* and gpt-4.1* (llm.model), else "none"',
  'llm.cache_ttl_seconds': '86400 with prompt_cache_retention "24h", else 300',
  'compaction.summary_max_tokens': 'min(4096, 8% of llm.context_window, 10% of compaction.working_tokens)',
  'compaction.summarizer_model': '= llm.model',
  'compaction.message_max_tokens': '25% of llm.context_window',
};

type Derived<T, K extends keyof T, V> = Omit<T, K> & { readonly [P in K]: V[P & keyof V] };

/** The merged settings of one channel: every leaf has a value, derived defaults included. */
export interface EffectiveSettings {
  readonly llm: Derived<
    Settings['llm'],
    'base_url' | 'encoding' | 'prompt_cache_retention' | 'cache_ttl_seconds',
    {
      base_url: string | undefined;
      encoding: TokenizerEncoding;
      prompt_cache_retention: CacheRetention | 'none';
      cache_ttl_seconds: number;
    }
  >;
  readonly compaction: Derived<
    Settings['compaction'],
    'summary_max_tokens' | 'summarizer_model' | 'message_max_tokens',
    { summary_max_tokens: number; summarizer_model: string; message_max_tokens: number }
  >;
  readonly memory: Settings['memory'];
  readonly bot: Settings['bot'];
  readonly tools: Settings['tools'];
  readonly privacy: Settings['privacy'];
  readonly budget: Settings['budget'];
}

export interface MergedSettings {
  readonly settings: EffectiveSettings;
  /** For every leaf, the index of the layer its value came from; -1 for a built-in or derived default. */
  readonly origin: Readonly<Record<LeafKey, number>>;
}

/**
 * Built-in defaults, then each layer in order, each leaf it sets replacing the one before; then the
 * defaults that depend on other settings (tokenizer, summary and message caps, summarizer model) are
 * filled from the merged values.
 */
export function mergeSettings(layers: readonly DeepReadonly<SettingsLayer>[]): MergedSettings {
  const values: Record<string, Record<string, unknown>> = {};
  const origin: Record<string, number> = {};
  for (const section of SECTIONS) {
    const merged: Record<string, unknown> = { ...BUILT_IN_DEFAULTS[section] };
    for (const key of SECTION_KEYS[section]) origin[`${section}.${key}`] = -1;
    layers.forEach((layer, index) => {
      for (const [key, value] of Object.entries(layer[section] ?? {})) {
        if (value === undefined) continue;
        merged[key] = value;
        origin[`${section}.${key}`] = index;
      }
    });
    values[section] = merged;
  }

  const llm = values.llm as Record<string, unknown> & { model: string; context_window: number };
  const compaction = values.compaction as Record<string, unknown>;
  llm.encoding ??= encodingForModel(llm.model);
  llm.prompt_cache_retention ??= defaultCacheRetention(llm.model);
  llm.cache_ttl_seconds ??= defaultCacheTtlSeconds(llm.prompt_cache_retention as CacheRetention | 'none');
  compaction.summary_max_tokens ??= defaultSummaryMaxTokens(
    llm.context_window,
    compaction.working_tokens as number | undefined,
  );
  compaction.summarizer_model ??= llm.model;
  compaction.message_max_tokens ??= defaultMessageMaxTokens(llm.context_window);

  return { settings: values as unknown as EffectiveSettings, origin: origin as Record<LeafKey, number> };
}

/** The merged value of one leaf. */
export function leafValue(settings: EffectiveSettings, leaf: LeafKey): unknown {
  const [section, key] = splitLeaf(leaf);
  return (settings[section] as Record<string, unknown>)[key];
}

export function splitLeaf(leaf: LeafKey): [Section, string] {
  const dot = leaf.indexOf('.');
  return [leaf.slice(0, dot) as Section, leaf.slice(dot + 1)];
}
