/**
 * A `UsageStore` whose records outlast an outage of the store behind it. A record the store cannot
 * take (Postgres away) is kept in memory and written again, with backoff, until it can: the cost a
 * channel ran up while its database was away still counts toward its spend limits and shows in
 * `ebb status`, instead of being dropped with a warning. A read writes what is kept first, so a spend
 * limit read after an outage sees the turns answered during it.
 *
 * - Only a failure the store says may pass (`retryable`: Postgres away, a timeout) keeps a record;
 *   one that never will (a constraint, a schema the database lacks) is logged as `usage.record_failed`
 *   and the record dropped, as before, rather than retried for ever.
 * - Kept records are merged by channel, hour, purpose and model (what the store adds them into), so
 *   an outage costs memory per channel and hour, not per turn; at most `maxKept` of those, and a
 *   record past that is dropped and counted (`usage.dropped`, once an outage).
 * - `record` resolves once the record is written or kept: a turn never fails for its usage.
 * - A read first writes what is kept, for at most `readWaitMs`: a spend limit read after an outage
 *   sees this process's records (another replica's or a worker's are written by their own process,
 *   and a limit's closed hours are read once an hour: records of an hour that closed during the
 *   outage count from the next hour on).
 * - At-least-once: a write whose connection was cut after Postgres committed it but before the answer
 *   came is written again, and counted twice. Counting a turn twice errs toward the limit; the
 *   alternative, dropping the whole outage's usage, errs away from it.
 * - `close()` tries what is kept once more; what is still kept is lost with the process, and said
 *   (`usage.lost`, with its calls and tokens). After `close` a record is written or, failing,
 *   logged as `usage.record_failed`, never kept.
 *
 * Log lines: `usage.record_deferred` when the first record is kept, `usage.recorded_late` when the
 * last kept one is written (how many, after how long).
 */
import { settleWithin } from '../support/deadline.js';
import { isRetryable } from '../support/errors.js';
import type { Logger } from '../support/logger.js';
import { channelCost, hourOf, type UsageQuery, type UsageStore, type UsageTotals } from './usage.js';

export interface RetryingUsageStoreOptions {
  readonly store: UsageStore;
  readonly log: Logger;
  /** The first wait before writing kept records again, doubled after each failed try up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** Channel-hour-purpose-model records kept at most. */
  readonly maxKept?: number;
  /** How long a read waits for what is kept to be written before it reads. */
  readonly readWaitMs?: number;
  readonly now?: () => number;
}

export const DEFAULT_RETRYING_USAGE = {
  retryMs: 1_000,
  maxRetryMs: 30_000,
  maxKept: 10_000,
  readWaitMs: 1_000,
  /** What `close` gives the last try: a stop is not held up by a store that does not answer. */
  closeMs: 2_000,
} as const;

interface Kept {
  usage: UsageTotals;
  readonly hour: Date;
}

type Counted = 'calls' | 'promptTokens' | 'cachedTokens' | 'completionTokens' | 'replies' | 'coldReplies';
const COUNTED: readonly Counted[] = [
  'calls',
  'promptTokens',
  'cachedTokens',
  'completionTokens',
  'replies',
  'coldReplies',
];

export class RetryingUsageStore implements UsageStore {
  readonly #store: UsageStore;
  readonly #log: Logger;
  readonly #retryMs: number;
  readonly #maxRetryMs: number;
  readonly #maxKept: number;
  readonly #readWaitMs: number;
  readonly #now: () => number;
  readonly #kept = new Map<string, Kept>();
  /** When the first record of this outage was kept; undefined while nothing is. */
  #keptSince: number | undefined;
  #recordsKept = 0;
  #dropped = 0;
  #wait: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The write of what is kept under way, so two never run at once, and the record it is writing. */
  #writing: Promise<void> | undefined;
  #inFlight: Kept | undefined;
  #closed = false;

  constructor(options: RetryingUsageStoreOptions) {
    this.#store = options.store;
    this.#log = options.log;
    this.#retryMs = options.retryMs ?? DEFAULT_RETRYING_USAGE.retryMs;
    this.#maxRetryMs = options.maxRetryMs ?? DEFAULT_RETRYING_USAGE.maxRetryMs;
    this.#maxKept = options.maxKept ?? DEFAULT_RETRYING_USAGE.maxKept;
    this.#readWaitMs = options.readWaitMs ?? DEFAULT_RETRYING_USAGE.readWaitMs;
    this.#now = options.now ?? Date.now;
    this.#wait = this.#retryMs;
  }

  /** Records kept, not yet written (the one being written included). */
  get kept(): number {
    return this.#kept.size + (this.#inFlight === undefined ? 0 : 1);
  }

  async record(usage: UsageTotals, at: Date): Promise<void> {
    try {
      await this.#store.record(usage, at);
    } catch (err) {
      if (this.#closed || !isRetryable(err)) {
        this.#log.warn({ event: 'usage.record_failed', err }, 'could not record usage: not counted');
      } else {
        this.#keep(usage, hourOf(at), err);
      }
      return;
    }
    // The store takes records again: what it could not take goes now, not at the next try.
    if (this.#kept.size > 0) void this.#writeKept();
  }

  async totalsSince(since: Date, channelKeys?: readonly string[]): Promise<UsageTotals[]> {
    await this.#beforeRead();
    return await this.#store.totalsSince(since, channelKeys);
  }

  async totalsIn(query: UsageQuery): Promise<UsageTotals[]> {
    await this.#beforeRead();
    return await this.#store.totalsIn(query);
  }

  /** What is kept, written first (for at most `readWaitMs`); nothing at all when nothing is: the usual read. */
  async #beforeRead(): Promise<void> {
    if (this.kept > 0) await settleWithin(this.#writeKept(), this.#readWaitMs);
  }

  /** Tries what is kept once more (for at most `withinMs`), then stops; what is still kept is logged as lost. */
  async close(withinMs: number = DEFAULT_RETRYING_USAGE.closeMs): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await settleWithin(this.#writeKept(), withinMs);
    const kept = [...this.#kept.values(), ...(this.#inFlight ? [this.#inFlight] : [])].map((k) => k.usage);
    // The write loop stops after the record in hand (which may yet land: it is counted as lost).
    this.#kept.clear();
    if (kept.length === 0) return;
    const { calls, promptTokens, completionTokens } = channelCost(kept, {});
    this.#log.error(
      { event: 'usage.lost', records: kept.length, calls, promptTokens, completionTokens },
      `stopped with ${kept.length} usage records the store had not taken: their cost is not counted`,
    );
  }

  #keep(usage: UsageTotals, hour: Date, err: unknown): void {
    const key = JSON.stringify([usage.channelKey, hour.getTime(), usage.purpose, usage.model]);
    const same = this.#kept.get(key);
    if (same !== undefined) {
      same.usage = add(same.usage, usage);
    } else if (this.#kept.size >= this.#maxKept) {
      if (this.#dropped++ === 0)
        this.#log.error(
          { event: 'usage.dropped', kept: this.#kept.size },
          `${this.#kept.size} usage records are waiting for the store: dropping the next ones`,
        );
      return;
    } else {
      this.#kept.set(key, { usage, hour });
    }
    this.#recordsKept += 1;
    if (this.#keptSince === undefined) {
      this.#keptSince = this.#now();
      this.#log.warn(
        { event: 'usage.record_deferred', err },
        'could not record usage: kept, and written again once the store takes it',
      );
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#writeKept().then(() => {
        if (this.#kept.size > 0) {
          this.#wait = Math.min(this.#wait * 2, this.#maxRetryMs);
          this.#schedule();
        }
      });
    }, this.#wait);
  }

  /**
   * Writes what is kept until the store refuses one; never throws. Each record leaves the map while
   * it is written, so one kept meanwhile for the same hour is not lost with it.
   */
  #writeKept(): Promise<void> {
    if (this.#kept.size === 0) return Promise.resolve();
    this.#writing ??= (async () => {
      try {
        for (const key of [...this.#kept.keys()]) {
          const entry = this.#kept.get(key);
          if (entry === undefined) continue;
          this.#kept.delete(key);
          this.#inFlight = entry;
          try {
            await this.#store.record(entry.usage, entry.hour);
          } catch {
            const since = this.#kept.get(key);
            this.#kept.set(
              key,
              since === undefined ? entry : { ...entry, usage: add(entry.usage, since.usage) },
            );
            return;
          } finally {
            this.#inFlight = undefined;
          }
        }
        if (this.#kept.size === 0) this.#recovered();
      } finally {
        this.#writing = undefined;
      }
    })();
    return this.#writing;
  }

  #recovered(): void {
    const since = this.#keptSince ?? this.#now();
    this.#log.info(
      {
        event: 'usage.recorded_late',
        records: this.#recordsKept,
        dropped: this.#dropped,
        ms: this.#now() - since,
      },
      `recorded ${this.#recordsKept} usage records the store could not take before`,
    );
    this.#keptSince = undefined;
    this.#recordsKept = 0;
    this.#dropped = 0;
    this.#wait = this.#retryMs;
  }
}

function add(a: UsageTotals, b: UsageTotals): UsageTotals {
  const sum: Partial<Record<Counted, number>> = {};
  for (const field of COUNTED) sum[field] = (a[field] ?? 0) + (b[field] ?? 0);
  return { ...a, ...sum };
}
