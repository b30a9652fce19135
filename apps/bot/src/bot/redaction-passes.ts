/**
 * The queued half of a deletion (or an edit under `on_edit = "resummarize"`): the active summaries
 * that hold what was taken back are written again from the archive as it now stands, by the
 * channel's summarizer, with `redactChannel` (the machinery `ebb forget` uses). It runs beside the
 * channel's turns, never in its actor: a turn never waits for the LLM call, and each rewritten span is
 * put in place under the channel lock like any splice (the generation moves; bots reload, told by the
 * context notifier).
 *
 * One pass at a time per channel; redactions queued while one runs are merged into the next. A pass
 * that fails (the summarizer down, Postgres away), or that finds compaction passes over the message
 * in flight (they may have read it before it was taken back, and splice it in when they land), is
 * run again after `retryMs`, up to `maxTries` times, then logged naming the command that finishes
 * the job (`ebb forget --match`).
 * The archive is already redacted when a pass is queued, and the summaries set aside: a pass lost with
 * the process leaves a placeholder, never the old text, and `resume` queues it again on the channel's
 * next turn. `pending` and `idle` let the bot's stop and tests wait for the passes in hand.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type ChannelPassSettings,
  type RedactChannelOptions,
  type RedactionReport,
  redactChannel,
} from '@ebb/compaction';
import {
  type ArchiveEditor,
  type ArchiveReader,
  type ContextNotifier,
  type Logger,
  PENDING_SUMMARY,
  type SeqRange,
  type Span,
  seqRanges,
  seqsOf,
  type TurnLog,
} from '@ebb/core';

export interface RedactionPassesOptions {
  readonly channels: ArchiveReader & ArchiveEditor & Pick<TurnLog, 'generation'>;
  readonly runs: RedactChannelOptions['runs'];
  /** The channel's summarizer and budget (`passSettingsResolver`, as the worker builds them). */
  readonly settingsFor: (channelKey: string) => Promise<ChannelPassSettings>;
  readonly notifier: ContextNotifier;
  readonly logger: Logger;
  /** Between tries of a failed pass (default 5 s). */
  readonly retryMs?: number;
  /** Tries of one pass before it is given up (default 5). */
  readonly maxTries?: number;
}

export const DEFAULT_REDACTION_PASSES = { retryMs: 5_000, maxTries: 5 } as const satisfies Required<
  Pick<RedactionPassesOptions, 'retryMs' | 'maxTries'>
>;

/**
 * What a pass has to do: the seqs taken back, and what to check again once compaction passes that
 * were in flight over them have landed (they may have stored memories learned from the old text).
 */
type Queued = { readonly ranges: readonly SeqRange[]; readonly afterPasses: readonly AfterPasses[] };

/** Drops what passes that read a message before it was taken back stored from it; returns how many memories went. */
export type AfterPasses = () => Promise<number>;

export class RedactionPasses {
  readonly #options: RedactionPassesOptions;
  /** Per channel with work: what waits for the next pass (merged), and the pass running. */
  readonly #channels = new Map<string, { waiting: Queued | undefined; running: Promise<void> }>();
  /** Aborted by `stop`: no pass starts, and one waiting to try again stops waiting. */
  readonly #stop = new AbortController();

  constructor(options: RedactionPassesOptions) {
    this.#options = options;
  }

  /**
   * Queues the summaries of `key` holding `ranges` to be written again from the archive as it stands
   * (already redacted or edited); returns at once.
   */
  enqueue(key: string, ranges: readonly SeqRange[], afterPasses?: AfterPasses): void {
    if (this.#stop.signal.aborted) return;
    const entry = this.#channels.get(key);
    const queued: Queued = { ranges, afterPasses: afterPasses === undefined ? [] : [afterPasses] };
    if (entry) {
      entry.waiting = entry.waiting === undefined ? queued : merge(entry.waiting, queued);
      return;
    }
    const created = { waiting: queued as Queued | undefined, running: Promise.resolve() };
    this.#channels.set(key, created);
    created.running = this.#drain(key, created);
  }

  /**
   * A channel's summaries still set aside (`PENDING_SUMMARY`) with no pass of this process queued or
   * running for them: the process that set them aside stopped before its pass ran. Queued again; the
   * bot calls this with the spans of every context it turns on, so the next message heals them.
   */
  resume(key: string, spans: readonly Span[]): void {
    if (this.#channels.has(key)) return;
    const waiting = spans.filter((s) => s.kind === 'summary' && s.text === PENDING_SUMMARY);
    // One seq of each selects it for `redactChannel` (what was taken back is tombstoned already), and
    // clears no more checkpoints or retired spans than that.
    if (waiting.length > 0) this.enqueue(key, seqRanges(waiting.map((s) => s.toSeq)));
  }

  /** Channels with a pass queued or running. */
  get pending(): number {
    return this.#channels.size;
  }

  /** Resolves once no pass is queued or running. */
  async idle(): Promise<void> {
    while (this.#channels.size > 0) await Promise.all([...this.#channels.values()].map((e) => e.running));
  }

  /** No pass starts from now on (the bot is stopping); the ones running finish, without waiting to retry. */
  stop(): void {
    this.#stop.abort();
  }

  async #drain(key: string, entry: { waiting: Queued | undefined }): Promise<void> {
    try {
      while (entry.waiting !== undefined && !this.#stop.signal.aborted) {
        const next = entry.waiting;
        entry.waiting = undefined;
        await this.#run(key, next);
      }
    } finally {
      this.#channels.delete(key);
    }
  }

  async #run(key: string, queued: Queued): Promise<void> {
    const { logger, notifier } = this.#options;
    const maxTries = this.#options.maxTries ?? DEFAULT_REDACTION_PASSES.maxTries;
    const stop = this.#stop.signal;
    // Cut short by `stop`: the pass then tries once more and gives up, logged, without the wait.
    const retry = () =>
      sleep(this.#options.retryMs ?? DEFAULT_REDACTION_PASSES.retryMs, undefined, { signal: stop }).catch(
        () => {},
      );
    let sawPasses = false;
    for (let tries = 1; ; tries++) {
      let report: RedactionReport;
      try {
        report = await redactChannel(
          {
            channels: this.#options.channels,
            runs: this.#options.runs,
            settingsFor: this.#options.settingsFor,
          },
          { channelKey: key, ranges: queued.ranges, archive: false, asArchived: true, fromEarlier: true },
        );
      } catch (err) {
        if (tries >= maxTries || stop.aborted) {
          logger.error(
            { event: 'message.resummarize_failed', err, channel: key, tries },
            'could not write the summaries holding a taken-back message again; the archive is redacted and the summaries set aside: run ebb forget --match on what it said',
          );
          return;
        }
        logger.warn(
          { event: 'message.resummarize_retry', err, channel: key, tries },
          'writing the summaries holding a taken-back message again failed; trying again',
        );
        await retry();
        continue;
      }
      const generation = await this.#options.channels.generation(key).catch(() => undefined);
      if (report.spans.length > 0 && generation !== undefined)
        await notifier.publish({ channelKey: key, generation }).catch(() => {});
      const fields = {
        event: 'message.resummarized',
        channel: key,
        summaries: report.spans.length,
        unresolved: report.unresolved.length,
        inFlight: report.inFlight,
        tries,
      };
      const passesInFlight = report.unresolved.length > 0 || report.inFlight > 0;
      sawPasses ||= passesInFlight;
      // A pass over the message that read it before it was taken back may splice that text in: once
      // such passes land, what they put in place is written again too.
      if (passesInFlight && tries < maxTries && !stop.aborted) {
        logger.info(
          { ...fields, event: 'message.resummarize_waiting' },
          'passes over a taken-back message are in flight; writing its summaries again once they land',
        );
        await retry();
        continue;
      }
      // The passes have landed: the memories they learned from the old text go too.
      const memories = sawPasses && !passesInFlight ? await this.#afterPasses(key, queued) : 0;
      if (passesInFlight)
        logger.warn(
          fields,
          'wrote the summaries holding a taken-back message again, but passes over it were still in flight; run ebb forget --match to be sure',
        );
      else
        logger.info(
          { ...fields, memories },
          `wrote ${report.spans.length} summaries holding a taken-back message again`,
        );
      return;
    }
  }

  async #afterPasses(key: string, queued: Queued): Promise<number> {
    let dropped = 0;
    for (const check of queued.afterPasses) {
      try {
        dropped += await check();
      } catch (err) {
        this.#options.logger.error(
          { event: 'message.resummarize_failed', err, channel: key },
          'could not drop the memories passes in flight learned from a taken-back message: run ebb forget --match on what it said',
        );
      }
    }
    return dropped;
  }
}

function merge(a: Queued, b: Queued): Queued {
  return {
    ranges: seqRanges([...seqsOf(a.ranges), ...seqsOf(b.ranges)]),
    afterPasses: [...a.afterPasses, ...b.afterPasses],
  };
}
