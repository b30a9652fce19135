/**
 * Finishes take-backs: every copy derived from the seqs a person (or a retention sweep, or `ebb
 * forget`) took back is dropped or written again, driven by the durable take-back row, not by a
 * process's memory. Runs in the bot (the take-backs it records, at once, and a sweep) and in the
 * worker (a sweep): any process finishes a take-back whose process died.
 *
 * `settle` is the fast half, a few store writes the bot makes in the channel's actor before it
 * answers the deletion: the memories whose source range holds a taken-back seq go (out of every
 * checkpoint too), checkpoints of runs over the seqs are cleared, every active summary holding them
 * is set aside (`PENDING_SUMMARY`, so no prompt from now on shows them) and retired spans over them
 * lose their text. `complete` does it again (idempotent: a pass may have landed meanwhile, from a
 * snapshot read before the take-back's commit) and then the slow half: the summaries set aside are
 * written again by the channel's summarizer from the redacted archive (`redactChannel`), bots are
 * told the context changed, `afterCompleted` runs (the bot scrubs its spool files) and the row is
 * marked completed with what it reached (`takeback.completed`). `onFinished` hears how each take-back
 * this process worked on ended (the dashboard's live feed); other processes see its context change.
 *
 * No wait on passes in flight: a pass whose snapshot predates the take-back cannot land what it read
 * (see `compaction-processor.ts`), however long it runs.
 *
 * A take-back that fails (the summarizer down, Postgres away) is released (`takeback.failed`) and
 * claimed again by the next sweep; a claim held by a process that died lapses after `leaseMs`.
 */
import {
  type ArchiveReader,
  type CheckpointEraser,
  type ContextNotifier,
  type Forgetting,
  type Logger,
  type MemoryStore,
  PENDING_SUMMARY,
  type RunStore,
  type SeqRange,
  settleWithin,
  spansToResummarize,
  spanTokens,
  type TakeBack,
  type TakeBackCounts,
  type TakeBackLog,
  type Tokenizer,
  type TurnLog,
} from '@ebb/core';
import type { ChannelPassSettings } from './compaction-processor.js';
import { Periodic } from './periodic.js';
import { redactChannel } from './redact-channel.js';
import { dropDerivedMemories } from './take-back-copies.js';

export interface TakeBackRunnerOptions {
  readonly channels: ArchiveReader & Forgetting & Pick<TurnLog, 'generation'>;
  readonly memories: Pick<MemoryStore, 'list' | 'forget'>;
  readonly runs: Pick<RunStore, 'recent'> & CheckpointEraser;
  readonly takeBacks: TakeBackLog;
  readonly settingsFor: (channelKey: string) => Promise<ChannelPassSettings>;
  readonly notifier: ContextNotifier;
  readonly logger: Logger;
  /** After the copies are rewritten, before the row is marked completed: the bot scrubs its spool. */
  readonly afterCompleted?: (takeBack: TakeBack) => Promise<void>;
  /**
   * After each take-back this runner worked on: completed (its row marked so), or failed (released,
   * pending for the next sweep). The bot's dashboard feed and the web channel's stream hear it here.
   */
  readonly onFinished?: (takeBack: TakeBack, outcome: TakeBackFinish) => void;
  /** A settled take-back's summaries set aside: the bot marks its cached context stale. */
  readonly onContextChanged?: (channelKey: string, generation: number) => void;
  /**
   * How long a claim holds unless renewed (default 30 s; renewed every third of it while the runner
   * works): a process that died holding one leaves it to the next sweep after that.
   */
  readonly leaseMs?: number;
  /** Between sweeps for pending take-backs (default 10 s). */
  readonly sweepMs?: number;
  /** Take-backs claimed per sweep (default 20). */
  readonly batch?: number;
}

export const DEFAULT_TAKE_BACK_RUNNER = {
  leaseMs: 30_000,
  sweepMs: 10_000,
  batch: 20,
} as const satisfies Required<Pick<TakeBackRunnerOptions, 'leaseMs' | 'sweepMs' | 'batch'>>;

/** How a take-back the runner worked on ended: what `onFinished` is told (counts and codes, never text). */
export type TakeBackFinish =
  | { readonly status: 'completed'; readonly counts: TakeBackCounts }
  | { readonly status: 'failed'; readonly error: string };

/** How long `stop` waits for its claims to be given up. */
export const TAKE_BACK_RELEASE_MS = 2_000;

/** What `settle` reached: memories dropped (the bot's replies that recalled them are derived too), checkpoints, summaries. */
export interface Settled extends TakeBackCounts {
  readonly droppedMemoryIds: readonly string[];
}

export class TakeBackRunner {
  readonly #options: TakeBackRunnerOptions;
  /** Take-backs this process is completing, by id. */
  readonly #running = new Map<string, Promise<void>>();
  readonly #sweeps: Periodic;
  #stopped = false;

  constructor(options: TakeBackRunnerOptions) {
    this.#options = options;
    this.#sweeps = new Periodic(() => this.sweep(), {
      intervalMs: options.sweepMs ?? DEFAULT_TAKE_BACK_RUNNER.sweepMs,
      onError: (err) =>
        options.logger.warn(
          { event: 'takeback.sweep_failed', err },
          'could not look for pending take-backs; trying again at the next sweep',
        ),
    });
  }

  /** The fast half, in the caller's order (the channel's actor): store writes only. */
  async settle(takeBack: Pick<TakeBack, 'channelKey' | 'ranges'>): Promise<Settled> {
    const { channels, runs } = this.#options;
    const { channelKey: key, ranges } = takeBack;
    const dropped = await dropDerivedMemories(this.#options, key, ranges);
    const checkpoints = await runs.clearCheckpoints(key, ranges);
    const { tokenizer } = await this.#options.settingsFor(key);
    const summaries = await this.#setAside(key, ranges, tokenizer);
    await channels.redactRetiredSpans(key, ranges);
    // Every replica reloads before its next turn: the tombstones and the summaries set aside moved
    // the generation, and a replica that misses this notice sees it on its next append.
    const generation = await channels.generation(key);
    await this.#options.notifier.publish({ channelKey: key, generation }).catch(() => {});
    return { memories: dropped.length, checkpoints, summaries, droppedMemoryIds: dropped.map((m) => m.id) };
  }

  /** Completes `takeBack` in the background, at once (this process recorded it); `idle` waits for it. */
  complete(takeBack: TakeBack): void {
    const { id } = takeBack;
    if (this.#stopped || this.#running.has(id)) return;
    // Claimed before it is run: one process at a time completes a take-back.
    const work = this.#claim({ id })
      .then(async (claimed) => {
        for (const t of claimed) await this.#run(t);
      })
      .catch((err: unknown) => {
        this.#options.logger.warn(
          { event: 'takeback.failed', err, takeBack: id },
          'could not claim a take-back to complete it; the next sweep will',
        );
        this.#finished(takeBack, { status: 'failed', error: errorText(err) });
      })
      .finally(() => this.#running.delete(id));
    this.#running.set(id, work);
  }

  /** Claims pending take-backs no process holds and completes them; resolves to how many it claimed. */
  async sweep(): Promise<number> {
    if (this.#stopped) return 0;
    const claimed = await this.#claim({});
    await Promise.all(
      claimed.map((t) => {
        const run = this.#run(t).finally(() => this.#running.delete(t.id));
        this.#running.set(t.id, run);
        return run;
      }),
    );
    return claimed.length;
  }

  /** Sweeps at once, then every `sweepMs` (unref'd: it never holds the process up). */
  start(): void {
    if (!this.#stopped) this.#sweeps.start();
  }

  /**
   * No take-back starts from now on; the ones running may finish (`idle`), but their claims are given
   * up at once, so the next process to sweep need not wait out a lease for one this stop cuts off.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    void this.#sweeps.stop();
    // Bounded: with the store away the lease lapses on its own.
    const released = Promise.all(
      [...this.#running.keys()].map((id) =>
        this.#options.takeBacks.finishTakeBack(id, { error: 'stopped' }).catch(() => {}),
      ),
    );
    await settleWithin(released, TAKE_BACK_RELEASE_MS);
  }

  /** Take-backs this process is completing. */
  get pending(): number {
    return this.#running.size;
  }

  /** Resolves once this process completes no take-back (a sweep in hand included). */
  async idle(): Promise<void> {
    while (this.#running.size > 0 || this.#sweeps.inHand)
      await Promise.all([...this.#running.values(), this.#sweeps.inHand]);
  }

  /** Pending take-backs no process holds (`id`: that one), claimed for a lease. */
  #claim(which: { readonly id?: string }): Promise<TakeBack[]> {
    const leaseMs = this.#options.leaseMs ?? DEFAULT_TAKE_BACK_RUNNER.leaseMs;
    const limit = which.id === undefined ? (this.#options.batch ?? DEFAULT_TAKE_BACK_RUNNER.batch) : 1;
    return this.#options.takeBacks.claimTakeBacks({ limit, leaseMs, ...which });
  }

  async #run(takeBack: TakeBack): Promise<void> {
    const { channels, takeBacks, notifier, logger } = this.#options;
    const key = takeBack.channelKey;
    const fields = { channel: key, takeBack: takeBack.id, kind: takeBack.kind, attempts: takeBack.attempts };
    const leaseMs = this.#options.leaseMs ?? DEFAULT_TAKE_BACK_RUNNER.leaseMs;
    const renewal = setInterval(
      () => void takeBacks.renewTakeBack(takeBack.id, leaseMs).catch(() => {}),
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    renewal.unref();
    let outcome: TakeBackFinish;
    try {
      const settled = await this.settle(takeBack);
      const report = await redactChannel(
        { channels, runs: this.#options.runs, settingsFor: this.#options.settingsFor },
        { channelKey: key, ranges: takeBack.ranges, archive: false, asArchived: true, fromEarlier: true },
      );
      if (report.unresolved.length > 0)
        throw new Error(
          `${report.unresolved.length} summaries kept being replaced while they were written again`,
        );
      const generation = await channels.generation(key);
      await notifier.publish({ channelKey: key, generation }).catch(() => {});
      await this.#options.afterCompleted?.(takeBack);
      const counts = {
        memories: settled.memories,
        checkpoints: settled.checkpoints,
        summaries: report.spans.length,
      };
      await takeBacks.finishTakeBack(takeBack.id, { counts });
      logger.info(
        {
          event: 'takeback.completed',
          ...fields,
          ...counts,
          ageMs: Math.max(0, Date.now() - takeBack.createdAt),
        },
        `completed a take-back: ${counts.summaries} summaries written again, ${counts.memories} memories dropped`,
      );
      outcome = { status: 'completed', counts };
    } catch (err) {
      logger.warn(
        { event: 'takeback.failed', err, ...fields },
        'could not complete a take-back yet; its copies stay set aside and the next sweep tries again',
      );
      outcome = { status: 'failed', error: errorText(err) };
      await takeBacks.finishTakeBack(takeBack.id, { error: outcome.error }).catch(() => {});
    } finally {
      clearInterval(renewal);
    }
    this.#finished(takeBack, outcome);
  }

  /** Tells `onFinished`; a listener that throws is logged, never taken for the take-back failing. */
  #finished(takeBack: TakeBack, outcome: TakeBackFinish): void {
    try {
      this.#options.onFinished?.(takeBack, outcome);
    } catch (err) {
      this.#options.logger.warn(
        { event: 'takeback.listener_failed', err, channel: takeBack.channelKey, takeBack: takeBack.id },
        'a listener of finished take-backs threw; the take-back itself is unaffected',
      );
    }
  }

  /**
   * Puts `PENDING_SUMMARY` in place of every active summary holding `ranges` (each under the channel
   * lock), so no prompt shows them until they are written again. Returns how many summaries hold
   * `ranges` (set aside now or before).
   */
  async #setAside(key: string, ranges: readonly SeqRange[], tokenizer: Tokenizer): Promise<number> {
    const { channels } = this.#options;
    const spans = spansToResummarize(await channels.loadPrefix(key), ranges);
    const stamp = Date.now();
    for (const span of spans) {
      if (span.text === PENDING_SUMMARY) continue;
      const range = { fromSeq: span.fromSeq, toSeq: span.toSeq };
      const outcome = await channels.replaceSummary(key, {
        ...range,
        text: PENDING_SUMMARY,
        tokens: spanTokens(tokenizer, { ...range, kind: 'summary', text: PENDING_SUMMARY }),
        jobId: `taken-back-${stamp}-${span.fromSeq}-${span.toSeq}`,
        replaces: span.jobId,
      });
      if (outcome.kind === 'replaced') this.#options.onContextChanged?.(key, outcome.generation);
    }
    return spans.length;
  }
}

function errorText(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.message.slice(0, 200) : 'error';
}
