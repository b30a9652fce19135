/**
 * Exponential backoff, the one way Ebb spaces tries: LLM calls (full jitter, never under the
 * provider's Retry-After), compaction jobs retried in-process (BullMQ's exponential schedule, so the
 * in-process driver retries as the worker does), the queue's Redis reconnects, MCP server restarts and
 * platform starts. Pure: the caller sleeps.
 */
export interface Backoff {
  /** The wait before the first retry; it doubles with each retry after it. */
  readonly initialDelayMs: number;
  /** The wait never grows past this (`Infinity`: no cap, as BullMQ's schedule has none). */
  readonly maxDelayMs: number;
  /**
   * The share of each wait drawn at random: the wait is `d·(1 − jitter) + d·jitter·random()`, so 0 (the
   * default) is exactly `d` and 1 is full jitter over `0..d`.
   */
  readonly jitter?: number;
}

/** The wait before retry `retry` (1-based: the first retry, after the first failed try, is 1). */
export function backoffDelayMs(backoff: Backoff, retry: number, random: () => number = Math.random): number {
  const ceiling = Math.min(backoff.maxDelayMs, Math.round(backoff.initialDelayMs * 2 ** (retry - 1)));
  const jitter = backoff.jitter ?? 0;
  if (jitter <= 0) return ceiling;
  return Math.floor(random() * ceiling * jitter + ceiling * (1 - jitter));
}
