/**
 * The bot's side of compaction: after every turn of a channel, ask `decideAfterTurn` (through the
 * channel's `CompactionMonitor`) and carry out its answer without ever waiting for a pass. Passes are
 * recorded as runs and enqueued; an emergency truncates at once through the store (under its channel
 * lock) and then decides again, which queues the heal when nothing else is in flight. The per-turn
 * cost is O(1) while no pass is due: the queue is asked what is in flight only once one is.
 *
 * Token figures in the events are prompt tokens in calibrated terms (context and reserve: system
 * prompt, tools and recalled memories, times the calibration factor), the same terms as `usage`, so a line never shows
 * more tokens than the window while its usage reads 0.95.
 */

import type { ContextView } from '../model/model.js';
import type { Calibration } from '../model/tokens.js';
import { planCompaction, summarySpanBound } from '../plans/plan-compaction.js';
import type { CompactionQueue, ContextWriter, RunStore, TurnLog } from '../ports/ports.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import { LruMap } from '../support/lru-map.js';
import { roundUsage } from '../usage/round-usage.js';
import type { CompactionEventSink } from './compaction-events.js';
import { CompactionMonitor, type MonitorTurn } from './compaction-monitor.js';
import { type CompactorSettings, settingsFor } from './compactor-settings.js';
import {
  type ChannelTerms,
  type CompactorSteps,
  compactorUsage,
  stubThroughStore,
  truncateThroughStore,
} from './compactor-steps.js';
import type { AfterTurnAction } from './decide-after-turn.js';
import { decideOnSilence } from './decide-on-silence.js';
import { type EnqueuePassOptions, enqueuePass } from './enqueue-pass.js';

/** The terms `compactNow` is asked in; exported here, beside the compactor that takes them. */
export type { ChannelTerms };

export interface ChannelCompactorOptions {
  readonly channels: Pick<TurnLog, 'loadContext'> & ContextWriter;
  /** The recent runs a landing is timed by (`recent`), and what a pass is recorded through. */
  readonly runs: Pick<RunStore, 'recent'> & EnqueuePassOptions['runs'];
  readonly queue: CompactionQueue;
  /** Tokens of a truncation marker (`chatMessageTokens(tokenizer, TRUNCATION_MARKER)`). */
  readonly markerTokens: number;
  readonly now?: () => number;
  readonly onEvent?: CompactionEventSink;
  /** Channels whose pace is kept in memory; the least recently used one starts afresh. */
  readonly maxChannels?: number;
}

export interface AfterTurnResult {
  readonly usage: number;
  readonly action: AfterTurnAction;
  /** The context after an emergency truncation (reloaded from the store); absent when unchanged. */
  readonly context?: ContextView;
  readonly jobId?: string;
}

const DEFAULT_MAX_CHANNELS = 10_000;
/** Runs read back after a context change to find the passes that landed. */
const LANDINGS_LOOKBACK = 4;

interface ChannelRecord {
  readonly monitor: CompactionMonitor;
  /** `finishedAt` of the newest landed pass already fed to the monitor. */
  landingsSeenUntil: number;
}

/**
 * The terms a channel's decisions are made on: its settings as its provider counts
 * (`settingsFor`: a working size is reached by either count). Every entry point that decides or
 * judges against the background threshold goes through here; a manual pass (`compactNow`) reads
 * only the fraction and takes its terms as given.
 */
function deciding(channelKey: string, settings: CompactorSettings, calibration: Calibration): ChannelTerms {
  return { channelKey, settings: settingsFor(settings, calibration), calibration };
}

export class ChannelCompactor {
  readonly #options: ChannelCompactorOptions;
  readonly #channels: LruMap<string, ChannelRecord>;
  readonly #now: () => number;
  readonly #emit: CompactionEventSink;
  /** What `enqueuePass` needs: the queue, the run store and the event sink. */
  readonly #passes: EnqueuePassOptions;
  /** What the steps carried out in the turn need: the store, the event sink, the marker's tokens. */
  readonly #steps: CompactorSteps;

  constructor(options: ChannelCompactorOptions) {
    this.#options = options;
    this.#channels = new LruMap(options.maxChannels ?? DEFAULT_MAX_CHANNELS);
    this.#now = options.now ?? Date.now;
    this.#emit = options.onEvent ?? (() => {});
    this.#passes = { queue: options.queue, runs: options.runs, emit: this.#emit };
    this.#steps = { channels: options.channels, emit: this.#emit, markerTokens: options.markerTokens };
  }

  usage(context: ContextView, settings: CompactorSettings, calibration: Calibration): number {
    return compactorUsage(context, { settings, calibration });
  }

  /** The monitor after a turn. `context` is the caller's current view of the channel. */
  async afterTurn(
    channelKey: string,
    context: ContextView,
    settings: CompactorSettings,
    calibration: Calibration,
  ): Promise<AfterTurnResult> {
    const terms = deciding(channelKey, settings, calibration);
    const turn = this.#turn(terms, context);
    this.#record(channelKey).monitor.observe(turn);
    return this.#decide(terms, turn);
  }

  /** Asks the queue only when the decision can depend on it, then acts on `turn.context`. */
  async #decide(terms: ChannelTerms, turn: MonitorTurn): Promise<AfterTurnResult> {
    let inFlight: readonly PassInFlight[] = [];
    if (this.#record(terms.channelKey).monitor.needsQueue(terms.settings.policy, turn)) {
      const asked = await this.#inFlight(terms.channelKey);
      if (asked === undefined) return this.#queueDown(terms, turn);
      inFlight = asked;
    }
    return this.#act(terms, turn, inFlight);
  }

  /**
   * An emergency truncation now, whatever the usage: the provider said the prompt does not fit.
   * Returns the context after it (undefined when nothing could be set aside).
   */
  async truncateNow(
    channelKey: string,
    settings: CompactorSettings,
    calibration: Calibration,
    usage: number,
  ): Promise<ContextView | undefined> {
    const inFlight = (await this.#inFlight(channelKey)) ?? [];
    return (await this.#emergency(deciding(channelKey, settings, calibration), usage, inFlight)).context;
  }

  /**
   * A manual pass (`/compact [focus]`): the background fraction, now, whatever the usage. `context`
   * is the caller's current view of the channel.
   */
  async compactNow(
    terms: ChannelTerms,
    context: ContextView,
    focus?: string,
  ): Promise<{ jobId?: string; reason?: string }> {
    const { channelKey, settings } = terms;
    const { policy } = settings;
    const usage = compactorUsage(context, terms);
    const result = planCompaction({
      context,
      tier: 'background',
      fraction: policy.backgroundFraction,
      protectRecent: policy.protectRecent,
      summaryTokens: summarySpanBound(settings.tokenizer, policy.summaryMaxTokens),
    });
    this.#emit({ event: 'compaction.triggered', channel: channelKey, tier: 'background', usage });
    if (result.kind === 'nothing') {
      this.#emit({
        event: 'compaction.skipped',
        channel: channelKey,
        tier: 'background',
        usage,
        reason: result.reason,
      });
      return { reason: result.reason };
    }
    const enqueued = await enqueuePass(this.#passes, channelKey, result.plan, {
      usage,
      ...(focus ? { focus } : {}),
    });
    if (enqueued === undefined) return { reason: 'queue_unavailable' };
    // A pass of this channel is waiting or running already: this one (and its focus) is not queued.
    return enqueued.deduplicated ? { reason: 'in_flight' } : { jobId: enqueued.jobId };
  }

  /**
   * The channel's cache has gone cold (no prompt for longer than its lifetime): a pass that is due
   * soon is queued now, off the turn path, while its break of the prompt costs nothing
   * (`decideOnSilence`). `context` is the caller's current view of the channel. Returns the job id
   * of a pass it queued.
   */
  async onSilence(
    channelKey: string,
    context: ContextView,
    settings: CompactorSettings,
    calibration: Calibration,
  ): Promise<{ jobId?: string }> {
    const terms = deciding(channelKey, settings, calibration);
    const turn = this.#turn(terms, context);
    const inFlight = await this.#inFlight(channelKey);
    if (inFlight === undefined) return {};
    const action = decideOnSilence({
      ...turn,
      policy: terms.settings.policy,
      inFlight,
      ineffectivePasses: this.#record(channelKey).monitor.ineffectivePasses,
    });
    if (action.kind === 'none') return {};
    const { plan } = action;
    const usage = turn.usage;
    this.#emit({
      event: 'compaction.triggered',
      channel: channelKey,
      tier: plan.tier,
      usage,
      reason: 'cache_cold',
    });
    const enqueued = await enqueuePass(this.#passes, channelKey, plan, { usage });
    return enqueued && !enqueued.deduplicated ? { jobId: enqueued.jobId } : {};
  }

  /**
   * The caller's cached context moved to a newer generation (it reloaded after a worker's splice, or
   * took a context that already holds one): the passes that landed since feed the channel's pace and
   * cooldown, and whether they helped is counted. Helping is judged on the figures the store took
   * under its lock at each splice, the context just before it against just after it, never on the
   * caller's copies: those can hold messages appended since, or be the spliced context already (a
   * turn's append reloaded it before its notification was handled), which made a pass that freed
   * plenty count as freeing nothing.
   */
  async contextChanged(
    channelKey: string,
    settings: CompactorSettings,
    calibration: Calibration,
  ): Promise<void> {
    const record = this.#record(channelKey);
    const runs = await this.#options.runs.recent(channelKey, LANDINGS_LOOKBACK).catch(() => []);
    const landed = runs
      .filter(
        (r) =>
          r.status === 'completed' &&
          r.finishedAt !== undefined &&
          r.createdAt !== undefined &&
          r.finishedAt > record.landingsSeenUntil,
      )
      .sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0));
    for (const run of landed) {
      const at = run.finishedAt ?? 0;
      record.monitor.landed({ tier: run.tier, latencyMs: at - (run.createdAt ?? at), at });
      record.landingsSeenUntil = at;
    }
    // Heals are not judged (they replace a marker, and may grow the context); nor is a splice whose
    // figures were never recorded (an earlier try applied it and died before saying so).
    const judged = landed.filter(
      (r) => r.tier !== 'emergency' && r.tokensBefore !== undefined && r.tokensAfter !== undefined,
    );
    const first = judged[0];
    if (first?.tokensBefore === undefined) return;
    // Passes that landed together are judged together, as `ebb simulate` judges a turn's landings:
    // the context before the first, less what each freed.
    const freed = judged.reduce((sum, r) => sum + (r.tokensBefore ?? 0) - (r.tokensAfter ?? 0), 0);
    const usage = (tokens: number) => compactorUsage({ tokens }, { settings, calibration });
    record.monitor.shrunk(
      deciding(channelKey, settings, calibration).settings.policy,
      usage(first.tokensBefore),
      usage(first.tokensBefore - freed),
      usage(0),
    );
  }

  async #act(
    terms: ChannelTerms,
    turn: MonitorTurn,
    inFlight: readonly PassInFlight[],
  ): Promise<AfterTurnResult> {
    const { channelKey, settings } = terms;
    const { context, usage } = turn;
    const { action, report } = this.#record(channelKey).monitor.decide(settings.policy, {
      ...turn,
      inFlight,
    });
    switch (action.kind) {
      case 'none':
        return { usage, action };
      case 'skip':
        if (report)
          this.#emit({
            event: 'compaction.skipped',
            channel: channelKey,
            tier: action.tier,
            usage,
            projectedUsage: roundUsage(action.projectedUsage),
            reason: action.reason,
          });
        return { usage, action };
      case 'enqueue': {
        if (action.mode !== 'heal')
          this.#emit({
            event: 'compaction.triggered',
            channel: channelKey,
            tier: action.plan.tier,
            usage,
            projectedUsage: roundUsage(action.projectedUsage),
          });
        const enqueued = await enqueuePass(this.#passes, channelKey, action.plan, {
          usage,
          delayMs: action.delayMs,
          ...(action.after === undefined ? {} : { after: action.after }),
        });
        return { usage, action, ...(enqueued && !enqueued.deduplicated ? { jobId: enqueued.jobId } : {}) };
      }
      case 'microcompact': {
        const stubbed = await stubThroughStore(this.#steps, terms, context, action.seqs);
        // The channel moved on under the plan: the next turn plans again on what is stored.
        if (stubbed === undefined) {
          const current = await this.#options.channels.loadContext(channelKey);
          return { usage: compactorUsage(current, terms), action, context: current };
        }
        // Decide again on the smaller context: a pass or a truncation may no longer be due.
        const after = await this.#decide(terms, this.#turn(terms, stubbed));
        return { ...after, context: after.context ?? stubbed };
      }
      case 'emergency': {
        const cut = await this.#emergency(terms, usage, inFlight, context.generation);
        return { usage, action, ...cut };
      }
    }
  }

  /** Redis is down: an emergency still truncates (it needs no queue); nothing is enqueued. */
  async #queueDown(terms: ChannelTerms, turn: MonitorTurn): Promise<AfterTurnResult> {
    const { channelKey, settings } = terms;
    const { usage } = turn;
    if (usage >= settings.policy.emergencyThreshold) {
      const cut = await truncateThroughStore(this.#steps, terms, usage, turn.context.generation);
      return { usage, action: { kind: 'emergency' }, ...cut };
    }
    if (this.#record(channelKey).monitor.reportOnce('queue_unavailable'))
      this.#emit({
        event: 'compaction.skipped',
        channel: channelKey,
        tier: usage >= settings.policy.aggressiveThreshold ? 'aggressive' : 'background',
        usage,
        reason: 'queue_unavailable',
      });
    return { usage, action: { kind: 'none' } };
  }

  async #emergency(
    terms: ChannelTerms,
    usage: number,
    inFlight: readonly PassInFlight[],
    /** The generation the decision was made on (undefined: cut whatever the state). */
    expectedGeneration?: number,
  ): Promise<{ context?: ContextView; jobId?: string }> {
    const cut = await truncateThroughStore(this.#steps, terms, usage, expectedGeneration);
    if (!cut.truncated || !cut.context) return cut;
    // Decide again on the cut context: the heal is queued when nothing else is in flight (a pass in
    // flight trims the marker when it lands, and the heal follows on a later turn).
    const after = await this.#act(terms, this.#turn(terms, cut.context), inFlight);
    return { context: cut.context, ...(after.jobId ? { jobId: after.jobId } : {}) };
  }

  /**
   * The channel's passes in flight; undefined when the queue cannot be reached (Redis down): then
   * nothing is enqueued, and an emergency, which needs no queue, still truncates.
   */
  async #inFlight(channelKey: string): Promise<readonly PassInFlight[] | undefined> {
    try {
      return await this.#options.queue.inFlight(channelKey);
    } catch {
      return undefined;
    }
  }

  /** What the monitor decides on for `context`, in the decision's terms and at this moment. */
  #turn(terms: ChannelTerms, context: ContextView): MonitorTurn {
    const { settings, calibration } = terms;
    return {
      context,
      usage: compactorUsage(context, terms),
      usagePerToken: calibration.factor / (settings.contextWindow - settings.maxOutputTokens),
      summaryTokens: summarySpanBound(settings.tokenizer, settings.policy.summaryMaxTokens),
      now: this.#now(),
    };
  }

  /** The channel's monitor, most recently used last; the least recently used is dropped past the bound. */
  #record(channelKey: string): ChannelRecord {
    return this.#channels.getOrSet(channelKey, () => ({
      monitor: new CompactionMonitor(),
      landingsSeenUntil: 0,
    }));
  }
}
