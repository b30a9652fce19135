/**
 * The dashboard's picture of usage over time, kept in memory by the bot: per channel, the usage
 * after each turn (`onTurn`) and the microcompactions and emergency truncations it made
 * (`onEvent`), in rings of fixed size. Passes are not kept here: the run store has them, across
 * restarts and from workers in other processes (see `dashboard-channels.ts`).
 *
 * Bounded twice over: at most `channels` channels (an `LruMap`, the least recently fed forgotten
 * first) and `points` points and `marks` marks each, in typed arrays. At the defaults (1,000 × 512
 * points of 12 bytes, 32 marks) that is about 6.5 MB at worst, whatever the traffic.
 */
import { LruMap } from '@ebb/core';

export interface UsageSeriesOptions {
  /** Channels remembered. */
  readonly channels?: number;
  /** Points per channel (the newest kept). */
  readonly points?: number;
  /** Microcompaction and truncation marks per channel. */
  readonly marks?: number;
}

export const DEFAULT_USAGE_SERIES = {
  channels: 1_000,
  points: 512,
  marks: 32,
} as const satisfies Required<UsageSeriesOptions>;

export interface UsagePoint {
  /** Epoch ms. */
  readonly at: number;
  readonly usage: number;
}

export interface UsageMark extends UsagePoint {
  /** What moved usage: stubbed tool results, or an emergency truncation. */
  readonly kind: 'microcompact' | 'truncation';
  /** Usage after it. */
  readonly after: number;
}

/** A ring of the newest `capacity` points, oldest first when read. */
class PointRing {
  readonly #at: Float64Array;
  readonly #usage: Float32Array;
  #next = 0;
  #size = 0;

  constructor(capacity: number) {
    this.#at = new Float64Array(capacity);
    this.#usage = new Float32Array(capacity);
  }

  push(at: number, usage: number): void {
    this.#at[this.#next] = at;
    this.#usage[this.#next] = usage;
    this.#next = (this.#next + 1) % this.#at.length;
    this.#size = Math.min(this.#size + 1, this.#at.length);
  }

  read(): UsagePoint[] {
    const out: UsagePoint[] = [];
    const capacity = this.#at.length;
    for (let i = 0; i < this.#size; i++) {
      const j = (this.#next - this.#size + i + capacity) % capacity;
      // Float32 keeps usage to 7 digits; rounded to 4 so the JSON is not 0.8100000023841858.
      out.push({ at: this.#at[j] ?? 0, usage: Math.round((this.#usage[j] ?? 0) * 1e4) / 1e4 });
    }
    return out;
  }
}

interface ChannelSeries {
  readonly points: PointRing;
  readonly marks: UsageMark[];
}

export class UsageSeries {
  readonly #options: Required<UsageSeriesOptions>;
  readonly #series: LruMap<string, ChannelSeries>;

  constructor(options: UsageSeriesOptions = {}) {
    this.#options = { ...DEFAULT_USAGE_SERIES, ...options };
    this.#series = new LruMap(this.#options.channels);
  }

  /** Usage after a turn. */
  record(channel: string, at: number, usage: number): void {
    if (!Number.isFinite(usage)) return;
    this.#of(channel).points.push(at, usage);
  }

  /** Usage fell from `usage` to `after` at `at` (stubbed tool results, a truncation): a point each side. */
  mark(channel: string, mark: UsageMark): void {
    if (!Number.isFinite(mark.usage) || !Number.isFinite(mark.after)) return;
    const series = this.#of(channel);
    series.points.push(mark.at, mark.usage);
    series.points.push(mark.at, mark.after);
    series.marks.push(mark);
    if (series.marks.length > this.#options.marks) series.marks.shift();
  }

  read(channel: string): { readonly points: UsagePoint[]; readonly marks: UsageMark[] } {
    const series = this.#series.get(channel);
    return series === undefined
      ? { points: [], marks: [] }
      : { points: series.points.read(), marks: [...series.marks] };
  }

  #of(channel: string): ChannelSeries {
    return this.#series.getOrSet(channel, () => ({
      points: new PointRing(this.#options.points),
      marks: [],
    }));
  }
}
