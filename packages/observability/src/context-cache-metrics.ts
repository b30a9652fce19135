/**
 * The bot's working-context cache in `/metrics` (`ebb_context_cache_*`), read on scrape from the
 * bot's own counts: hits and misses of a turn's channel lookup, cached channels read again whole
 * (reloads) or brought level by the messages after their head (delta loads: other replicas'
 * appends), channels evicted to stay within the budget, and the channels and estimated bytes held
 * against `[bot] context_cache_mb`. The series are registered when a source is first named: a
 * process without a bot (a worker) has none of them.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The cache's counts since the process started, and what it holds now. */
export interface ContextCacheStats {
  readonly hits: number;
  readonly misses: number;
  /** Whole working contexts of cached channels read again: stale, at another generation, or not adding up. */
  readonly reloads: number;
  /** Cached channels brought level by the messages appended after their head (`TurnLog.loadAfter`). */
  readonly deltaLoads: number;
  /** Cached channels brought level by another replica's appends as they were made (`AppendFeed`): no read. */
  readonly appendsHeard: number;
  /** Channels dropped to stay within the budget (their next turn loads them again). */
  readonly evictions: number;
  readonly channels: number;
  /** Estimated bytes of the contexts held. */
  readonly bytes: number;
  /** `[bot] context_cache_mb`, in bytes. */
  readonly budgetBytes: number;
}

type Read = (stats: ContextCacheStats) => number;

const COUNTERS: readonly [string, string, Read][] = [
  ['ebb_context_cache_hits_total', "Turns whose channel's working context was in memory.", (s) => s.hits],
  [
    'ebb_context_cache_misses_total',
    "Turns that loaded their channel's working context from the database (one round trip).",
    (s) => s.misses,
  ],
  [
    'ebb_context_cache_reloads_total',
    "Cached channels whose whole working context was read again (a context change, or another replica's write).",
    (s) => s.reloads,
  ],
  [
    'ebb_context_cache_delta_loads_total',
    'Cached channels brought up to date by reading only the messages other replicas appended after them.',
    (s) => s.deltaLoads,
  ],
  [
    'ebb_context_cache_appends_heard_total',
    "Cached channels brought up to date by another replica's appends as it made them (no database read).",
    (s) => s.appendsHeard,
  ],
  [
    'ebb_context_cache_evictions_total',
    'Channels dropped from the context cache, least recently used first, to stay within [bot] context_cache_mb.',
    (s) => s.evictions,
  ],
];

const GAUGES: readonly [string, string, Read][] = [
  ['ebb_context_cache_channels', 'Channels whose working context is held in memory.', (s) => s.channels],
  ['ebb_context_cache_bytes', 'Estimated bytes of the working contexts held in memory.', (s) => s.bytes],
  [
    'ebb_context_cache_budget_bytes',
    'The context cache budget, [bot] context_cache_mb.',
    (s) => s.budgetBytes,
  ],
];

/** The setter of the series' source; the first source registers them in `registers`. */
export function contextCacheMetrics(
  registers: Registry[],
): (source: (() => ContextCacheStats) | undefined) => void {
  let source: (() => ContextCacheStats) | undefined;
  let registered = false;
  const register = () => {
    for (const [name, help, read] of COUNTERS) {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          if (source) this.inc(read(source()));
        },
      });
    }
    for (const [name, help, read] of GAUGES) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.reset();
          if (source) this.set(read(source()));
        },
      });
    }
  };
  return (next) => {
    source = next;
    if (next === undefined || registered) return;
    registered = true;
    register();
  };
}
