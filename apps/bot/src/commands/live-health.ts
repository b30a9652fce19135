/**
 * What the running Ebb says of itself, for `ebb status`: its `/healthz` (the `[web]` address,
 * loopback for a wildcard host), since only that process knows how its MCP servers are doing and
 * what its context cache holds. Undefined when it cannot be asked (not running, another address).
 */
import type { EbbConfig } from '@ebb/config';
import type { ContextCacheStats } from '@ebb/observability';

const HEALTH_TIMEOUT_MS = 1_000;

export interface LiveHealth {
  readonly mcp?: Record<string, { status: string; tools: number; restarts: number }>;
  /** Absent from an older Ebb's report; null in a process without a bot. */
  readonly contextCache?: ContextCacheStats | null;
}

export async function readLiveHealth(
  config: EbbConfig,
  fetchImpl: typeof fetch = fetch,
): Promise<LiveHealth | undefined> {
  const host = ['0.0.0.0', '::', ''].includes(config.web.host) ? '127.0.0.1' : config.web.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.web.port}/healthz`;
  try {
    const res = await fetchImpl(url, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    return (await res.json()) as LiveHealth;
  } catch {
    return undefined;
  }
}

/** The cache as `ebb status` prints it: one line, or why it is not known. */
export function formatContextCache(stats: ContextCacheStats | null): string[] {
  if (stats === null)
    return ['', 'Context cache: unknown (Ebb is not running, or its /healthz is not reachable)'];
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes < 10 * 2 ** 20 ? 1 : 0)} MiB`;
  const lookups = stats.hits + stats.misses;
  const hitRate =
    lookups === 0
      ? 'no turns yet'
      : `${((100 * stats.hits) / lookups).toFixed(1)}% of ${lookups.toLocaleString('en')} turns hit`;
  return [
    '',
    `Context cache: ${stats.channels.toLocaleString('en')} channels, ${mib(stats.bytes)} of ${mib(stats.budgetBytes)} ([bot] context_cache_mb); ${hitRate}; ${stats.evictions.toLocaleString('en')} evicted${followed(stats)}`,
  ];
}

/**
 * How cached channels caught up with other replicas' writes, where any did: by their appends as they
 * were heard (no read), by the messages after their head (delta loads), or by reading their whole
 * context again (reloads). A bot of an earlier version reports no appends heard.
 */
function followed(stats: ContextCacheStats): string {
  const { appendsHeard = 0, deltaLoads = 0, reloads = 0 } = stats;
  if (appendsHeard + deltaLoads + reloads === 0) return '';
  const n = (count: number) => count.toLocaleString('en');
  return `; caught up ${n(appendsHeard)} times by appends heard, ${n(deltaLoads)} by delta, ${n(reloads)} by reload`;
}
