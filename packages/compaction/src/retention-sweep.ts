/**
 * Retention: a channel with `[privacy] retain_days` keeps no message older than that, by the same
 * machinery a deletion uses. Off the turn path: a sweep runs beside the turns (hourly, and once at
 * start), never in a channel's actor, and each of its writes is one short transaction under the
 * channel lock, as an append is.
 *
 * Per channel and sweep: the archive is read in pages of seqs and times (no text) from where the last
 * sweep of this process stopped, up to the first message young enough to keep; the old ones are read
 * whole and tombstoned in batches of `batch` (a transaction each, no take-back yet), then one
 * take-back over all of them is recorded (`recordTakeBack`, kind `retention`) and settled and
 * completed by the take-back runner: memories, checkpoints and summaries are traced from it as from
 * a deletion, once per sweep rather than once per batch. Recorded after the last batch, its mark is
 * above that of any pass that read one of them before, so such a pass cannot land what it read.
 * One `retention.swept` line per channel that lost messages, and `onSwept` (metrics).
 *
 * Paced by its duty cycle: after each page and each batch, a pause of `(1 - dutyCycle) / dutyCycle`
 * times what the step took (9× at the default 10%), so the sweep works a tenth of the time it runs,
 * and pauses longer when a busy machine makes its steps slower. What a turn beside it meets is the
 * machine busy with a step (in the bench, turns that overlap a batch are 2–4× as common among the
 * slowest 1% as among all; the pool never waits), so steps are short (a batch of 100 is ~3 ms of
 * Postgres, most of its ~9 ms being round trips) and rare: the sweep is slow rather than in the way.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ArchiveReader,
  type ChannelDirectory,
  type Forgetting,
  type Logger,
  LruMap,
  type StoredMessage,
  seqRanges,
  type TakeBackLog,
  type Tokenizer,
  tombstone,
} from '@ebb/core';
import { Periodic } from './periodic.js';
import type { TakeBackRunner } from './take-back-runner.js';

export interface RetentionSweepOptions {
  readonly channels: ArchiveReader & Forgetting & Pick<ChannelDirectory, 'listChannels'>;
  readonly takeBacks: Pick<TakeBackLog, 'recordTakeBack'>;
  readonly runner: Pick<TakeBackRunner, 'settle' | 'complete'>;
  /** Whether any channel may have `retain_days` (no sweep reads the store otherwise). */
  readonly enabled?: () => boolean;
  /** The channel's `retain_days`, or undefined to keep it for ever. */
  readonly retainDaysFor: (channelKey: string) => number | undefined;
  readonly tokenizerFor: (channelKey: string) => Promise<Tokenizer>;
  readonly logger: Logger;
  /** After each channel that lost messages: for metrics. */
  readonly onSwept?: (sweep: { readonly channel: string; readonly messages: number }) => void;
  readonly now?: () => number;
  /** Between sweeps (default 1 h). */
  readonly intervalMs?: number;
  /** Messages tombstoned per transaction (default 100: a short step for the turns beside it). */
  readonly batch?: number;
  /** Seqs and times read per page of the archive (default 1,000). */
  readonly page?: number;
  /** The share of its running time the sweep works, in (0, 1] (default 0.1; 1: no pauses). */
  readonly dutyCycle?: number;
}

export const DEFAULT_RETENTION_SWEEP = {
  intervalMs: 60 * 60_000,
  batch: 100,
  page: 1_000,
  dutyCycle: 0.1,
} as const satisfies Required<Pick<RetentionSweepOptions, 'intervalMs' | 'batch' | 'page' | 'dutyCycle'>>;

const DAY_MS = 86_400_000;
/** The longest pause after a step (a stop waits for it). */
const MAX_PAUSE_MS = 1_000;
/** Channels whose scan position this process remembers. */
const REMEMBERED_CHANNELS = 10_000;

export class RetentionSweep {
  readonly #options: RetentionSweepOptions;
  /** Per channel: the seq up to which everything old enough has been taken back (a scan starts after it). */
  readonly #through = new LruMap<string, number>(REMEMBERED_CHANNELS);
  readonly #sweeps: Periodic;
  #stopped = false;

  constructor(options: RetentionSweepOptions) {
    this.#options = options;
    this.#sweeps = new Periodic(() => this.sweep(), {
      intervalMs: options.intervalMs ?? DEFAULT_RETENTION_SWEEP.intervalMs,
      onError: (err) =>
        options.logger.warn(
          { event: 'retention.sweep_failed', err },
          'the retention sweep failed; the next one starts where this one stopped',
        ),
    });
  }

  /** One sweep over every channel with `retain_days`; resolves to how many messages it took back. */
  async sweep(): Promise<number> {
    if (this.#stopped || this.#options.enabled?.() === false) return 0;
    let total = 0;
    for (const { key } of await this.#options.channels.listChannels()) {
      if (this.#stopped) break;
      const days = this.#options.retainDaysFor(key);
      if (days === undefined) continue;
      total += await this.#sweepChannel(key, (this.#options.now ?? Date.now)() - days * DAY_MS);
    }
    return total;
  }

  /** Sweeps now, then every `intervalMs` (unref'd). */
  start(): void {
    if (!this.#stopped) this.#sweeps.start();
  }

  /**
   * No sweep starts from now on, and the one running stops at its next batch (what it tombstoned is
   * recorded and settled first); resolves once it has.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#sweeps.stop();
  }

  async #sweepChannel(key: string, cutoff: number): Promise<number> {
    const { channels, logger } = this.#options;
    const started = Date.now();
    const pageSize = this.#options.page ?? DEFAULT_RETENTION_SWEEP.page;
    const old: number[] = [];
    let after = this.#through.get(key) ?? 0;
    for (let young = false; !young && !this.#stopped; ) {
      const page = await this.#paced(() => channels.archiveTimes(key, after, pageSize));
      for (const m of page) {
        if (m.at >= cutoff) {
          young = true;
          break;
        }
        if (!m.taken) old.push(m.seq);
        after = m.seq;
      }
      if (page.length < pageSize) break;
    }
    if (old.length === 0) {
      this.#through.set(key, after);
      return 0;
    }
    const tokenizer = await this.#options.tokenizerFor(key);
    // A tombstone's tokens depend on its role, author and tool calls only: counted once per kind.
    const counted = new Map<string, number>();
    const measuring: Tokenizer = {
      encoding: tokenizer.encoding,
      encode: (text) => tokenizer.encode(text),
      decode: (tokens) => tokenizer.decode(tokens),
      count: (text) => {
        const known = counted.get(text);
        if (known !== undefined) return known;
        const n = tokenizer.count(text);
        if (counted.size < 10_000) counted.set(text, n);
        return n;
      },
    };
    let taken = 0;
    const done: number[] = [];
    const size = this.#options.batch ?? DEFAULT_RETENTION_SWEEP.batch;
    for (let i = 0; i < old.length && !this.#stopped; i += size) {
      // The batch's seqs: a range of the archive, less those taken back before.
      const wanted = new Set(old.slice(i, i + size));
      const range = { fromSeq: old[i] as number, toSeq: old[Math.min(i + size, old.length) - 1] as number };
      const tombstones = await this.#paced(async () => {
        const messages = await channels.readArchive(key, range.fromSeq, range.toSeq);
        const batch = messages
          .filter((m: StoredMessage) => wanted.has(m.seq))
          .map((m) => tombstone(m, measuring));
        taken += (await channels.redactArchive(key, batch, undefined)).redacted;
        return batch;
      });
      for (const t of tombstones) done.push(t.seq);
    }
    if (done.length === 0) return 0;
    // The batches tombstoned (all of them, unless a stop cut the sweep short: the next goes on).
    const takeBack = await this.#options.takeBacks.recordTakeBack(key, {
      kind: 'retention',
      ranges: seqRanges(done),
      platformMessageIds: [],
    });
    const settled = await this.#options.runner.settle(takeBack);
    this.#options.runner.complete(takeBack);
    if (done.length === old.length) this.#through.set(key, after);
    logger.info(
      {
        event: 'retention.swept',
        channel: key,
        messages: taken,
        memories: settled.memories,
        summaries: settled.summaries,
        takeBack: takeBack.id,
        durationMs: Date.now() - started,
      },
      `retention took back ${taken} message(s) older than the channel's retain_days`,
    );
    this.#options.onSwept?.({ channel: key, messages: taken });
    return taken;
  }

  /** `step`, then the pause the duty cycle asks for after it (see the top of this file). */
  async #paced<T>(step: () => Promise<T>): Promise<T> {
    const duty = this.#options.dutyCycle ?? DEFAULT_RETENTION_SWEEP.dutyCycle;
    const started = performance.now();
    const result = await step();
    const pause = ((1 - duty) / duty) * (performance.now() - started);
    if (pause > 0 && !this.#stopped) await sleep(Math.min(MAX_PAUSE_MS, pause));
    return result;
  }
}
