/** How long a provider keeps a channel's cached prompt prefix, by default, for each model. */
import type { CacheRetention } from '@ebb/core';

/** OpenAI's documented lifetime of a cached prefix: 5 to 10 minutes of inactivity (the short end), or a day with `24h` retention. */
const DEFAULT_CACHE_TTL_SECONDS = { in_memory: 300, '24h': 86_400 } as const;

/**
 * OpenAI's models that keep a prefix for up to a day when asked (`prompt_cache_retention = "24h"`):
 * the GPT-5 family and gpt-4.1 (from gpt-5.5 on a day is the only retention there is; for the older
 * ones it is the default of an organization without zero data retention). A cached prefix costs
 * the same kept for a day as for minutes, and a quiet channel's next reply finds it warm.
 */
const DAY_RETENTION_MODELS = /^(gpt-5|gpt-4\.1)/i;

/**
 * `prompt_cache_retention` unset: `24h` for a model that takes it, `none` (no parameter) for any
 * other, an older model or another provider's. A server that refuses it anyway has it dropped by
 * the request dialect after one refusal.
 */
export function defaultCacheRetention(model: string): CacheRetention | 'none' {
  return DAY_RETENTION_MODELS.test(model) ? '24h' : 'none';
}

/** `cache_ttl_seconds` unset: a day when a day's retention is asked for, else OpenAI's short end. */
export function defaultCacheTtlSeconds(retention: CacheRetention | 'none'): number {
  return DEFAULT_CACHE_TTL_SECONDS[retention === '24h' ? '24h' : 'in_memory'];
}
