/**
 * What the running bot tells the dashboard as it happens: the usage after each turn, compaction
 * events, context changes and the take-backs it finished. It keeps the usage series (`UsageSeries`,
 * bounded) and hands every event to the open event streams (`GET /api/dashboard/events`). Built
 * before anything that emits, so the composition root can wire the bot's `onTurn`, `onEvent` and
 * `onTakeBackFinished` and the notifier to it.
 *
 * Events carry numbers and ids only: the page reads text through the history route.
 */
import type { TakeBackFinish } from '@ebb/compaction';
import type { CompactionLogEvent, TakeBack } from '@ebb/core';
import type { DashboardEvent } from '@ebb/web';
import { UsageSeries, type UsageSeriesOptions } from './usage-series.js';

export interface DashboardFeedOptions {
  readonly series?: UsageSeriesOptions;
  /** Tests: the clock of points and events. */
  readonly now?: () => number;
}

export class DashboardFeed {
  readonly series: UsageSeries;
  readonly #listeners = new Set<(event: DashboardEvent) => void>();
  readonly now: () => number;

  constructor(options: DashboardFeedOptions = {}) {
    this.series = new UsageSeries(options.series);
    this.now = options.now ?? Date.now;
  }

  /** After a turn: a point of the channel's series, and a `turn` event. */
  onTurn(turn: { readonly channel: string; readonly usage: number }): void {
    const at = this.now();
    this.series.record(turn.channel, at, turn.usage);
    this.#publish({ type: 'turn', channel: turn.channel, usage: turn.usage, at });
  }

  /** A compaction event: microcompactions and truncations are marks of the series; every one is sent on. */
  onCompactionEvent(e: CompactionLogEvent): void {
    const at = this.now();
    if (
      (e.event === 'compaction.microcompacted' || e.event === 'compaction.emergency') &&
      e.usage !== undefined
    ) {
      // The event's usage is after; the ratio of its prompt tokens before and after gives the usage before.
      const before =
        e.tokensBefore !== undefined && e.tokensAfter !== undefined && e.tokensAfter > 0
          ? (e.usage * e.tokensBefore) / e.tokensAfter
          : e.usage;
      this.series.mark(e.channel, {
        at,
        usage: before,
        after: e.usage,
        kind: e.event === 'compaction.microcompacted' ? 'microcompact' : 'truncation',
      });
    }
    this.#publish({
      type: 'compaction',
      channel: e.channel,
      event: e.event,
      tier: e.tier,
      ...(e.usage === undefined ? {} : { usage: e.usage }),
      ...(e.jobId === undefined ? {} : { jobId: e.jobId }),
      at,
    });
  }

  /** A context changed: a splice by a worker, in this process or another (the notifier). */
  onContextChanged(change: { readonly channelKey: string; readonly generation: number }): void {
    this.#publish({
      type: 'context',
      channel: change.channelKey,
      generation: change.generation,
      at: this.now(),
    });
  }

  /** A take-back this process completed, or failed to complete (still pending): its id and kind, no text. */
  onTakeBackFinished(takeBack: TakeBack, outcome: TakeBackFinish): void {
    this.#publish({
      type: 'takeback',
      channel: takeBack.channelKey,
      takeBack: takeBack.id,
      kind: takeBack.kind,
      status: outcome.status,
      at: this.now(),
    });
  }

  /** One listener per open event stream; returns the unsubscribe. */
  subscribe(listener: (event: DashboardEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #publish(event: DashboardEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}
