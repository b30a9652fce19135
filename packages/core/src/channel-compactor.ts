/**
 * The bot's side of compaction: after every turn of a channel, decide and act without ever waiting
 * for a pass. Background and aggressive passes are recorded as runs and enqueued; an emergency
 * truncates at once through the store (under its channel lock) and enqueues the pass that heals the
 * cut. The per-turn cost is O(1) while usage is under the background threshold: the queue is only
 * asked whether a job is in flight once a tier is due.
 */

import type { CompactionEventSink } from './compaction-events.js';
import { CompactionMonitor } from './compaction-monitor.js';
import type { TierDecision } from './decide-tier.js';
import type { ContextView, Tier } from './model.js';
import { type CompactionPlan, planCompaction, planHeal } from './plan-compaction.js';
import type { CompactionPolicy } from './policy.js';
import type { ChannelStore, CompactionQueue, RunStore, TruncationOutcome } from './ports.js';
import { type Calibration, usageOf } from './tokens.js';

export interface CompactorSettings {
  readonly policy: CompactionPolicy;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  /** Tokens of the system prompt and the memory recall budget. */
  readonly reservedTokens: number;
}

export interface ChannelCompactorOptions {
  readonly channels: ChannelStore;
  readonly runs: RunStore;
  readonly queue: CompactionQueue;
  /** Tokens of a truncation marker (`chatMessageTokens(tokenizer, TRUNCATION_MARKER)`). */
  readonly markerTokens: number;
  readonly now?: () => number;
  readonly onEvent?: CompactionEventSink;
}

export interface AfterTurnResult {
  readonly usage: number;
  readonly decision: TierDecision;
  /** The context after an emergency truncation (reloaded from the store); absent when unchanged. */
  readonly context?: ContextView;
  readonly jobId?: string;
}

export class ChannelCompactor {
  readonly #options: ChannelCompactorOptions;
  readonly #monitors = new Map<string, CompactionMonitor>();
  readonly #now: () => number;

  constructor(options: ChannelCompactorOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  usage(context: ContextView, settings: CompactorSettings, calibration: Calibration): number {
    return usageOf({
      contextTokens: context.tokens,
      reservedTokens: settings.reservedTokens,
      contextWindow: settings.contextWindow,
      maxOutputTokens: settings.maxOutputTokens,
      calibration,
    });
  }

  /** The monitor after a turn. `context` is the caller's current view of the channel. */
  async afterTurn(
    channelKey: string,
    context: ContextView,
    settings: CompactorSettings,
    calibration: Calibration,
  ): Promise<AfterTurnResult> {
    const { policy } = settings;
    const usage = this.usage(context, settings, calibration);
    const needsHeal = context.spans.some((s) => s.kind === 'truncated');
    // Below the background threshold with nothing to heal: no I/O at all.
    const jobInFlight =
      usage >= policy.backgroundThreshold || needsHeal ? await this.#inFlight(channelKey) : false;
    const { decision, report } = this.#monitor(channelKey).decide(policy, {
      usage,
      now: this.#now(),
      jobInFlight,
      needsHeal,
    });
    const emit = this.#options.onEvent ?? (() => {});
    switch (decision.kind) {
      case 'none':
        return { usage, decision };
      case 'skip':
        if (report)
          emit({
            event: 'compaction.skipped',
            channel: channelKey,
            tier: decision.tier,
            usage,
            reason: decision.reason,
          });
        return { usage, decision };
      case 'heal': {
        const plan = planHeal(context);
        const jobId = plan ? (await this.#enqueue(channelKey, plan, usage))?.jobId : undefined;
        return { usage, decision, ...(jobId ? { jobId } : {}) };
      }
      case 'compact':
        return {
          usage,
          decision,
          ...(await this.#compact(channelKey, context, decision.tier, policy, usage)),
        };
      case 'emergency':
        return {
          usage,
          decision,
          ...(await this.#emergency(
            channelKey,
            settings,
            calibration,
            usage,
            jobInFlight,
            context.generation,
          )),
        };
    }
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
    const jobInFlight = await this.#inFlight(channelKey);
    return (await this.#emergency(channelKey, settings, calibration, usage, jobInFlight)).context;
  }

  /** A manual pass (`/compact [focus]`): the background fraction, now, whatever the usage. */
  async compactNow(
    channelKey: string,
    context: ContextView,
    settings: CompactorSettings,
    calibration: Calibration,
    focus?: string,
  ): Promise<{ jobId?: string; reason?: string }> {
    const usage = this.usage(context, settings, calibration);
    return this.#compact(channelKey, context, 'background', settings.policy, usage, focus);
  }

  /**
   * A pass of this channel was spliced; `usage` is measured on the reloaded context. Returns whether
   * it was effective (ineffective passes are counted and, past the limit, stop the channel queueing).
   */
  passCompleted(channelKey: string, policy: CompactionPolicy, usage: number): boolean {
    return this.#monitor(channelKey).passCompleted(policy, usage);
  }

  async #compact(
    channelKey: string,
    context: ContextView,
    tier: Tier,
    policy: CompactionPolicy,
    usage: number,
    focus?: string,
  ): Promise<{ jobId?: string; reason?: string }> {
    const emit = this.#options.onEvent ?? (() => {});
    emit({ event: 'compaction.triggered', channel: channelKey, tier, usage });
    const fraction = tier === 'aggressive' ? policy.aggressiveFraction : policy.backgroundFraction;
    const result = planCompaction({ context, tier, fraction, protectRecent: policy.protectRecent });
    if (result.kind === 'nothing') {
      const monitor = this.#monitor(channelKey);
      monitor.enqueued(this.#now());
      monitor.passCompleted(policy, usage);
      emit({ event: 'compaction.skipped', channel: channelKey, tier, usage, reason: result.reason });
      return { reason: result.reason };
    }
    const enqueued = await this.#enqueue(channelKey, result.plan, usage, focus);
    if (enqueued === undefined) return { reason: 'queue_unavailable' };
    // A pass of this channel is waiting or running already: this one (and its focus) is not queued.
    return enqueued.deduplicated ? { reason: 'in_flight' } : { jobId: enqueued.jobId };
  }

  async #emergency(
    channelKey: string,
    settings: CompactorSettings,
    calibration: Calibration,
    usage: number,
    jobInFlight: boolean,
    /** The generation the decision was made on (undefined: cut whatever the state). */
    expectedGeneration?: number,
  ): Promise<{ context?: ContextView; jobId?: string }> {
    const { policy } = settings;
    const emit = this.#options.onEvent ?? (() => {});
    emit({ event: 'compaction.triggered', channel: channelKey, tier: 'emergency', usage });
    const request = {
      fraction: policy.emergencyFraction,
      protectRecent: policy.protectRecent,
      markerTokens: this.#options.markerTokens,
    };
    let outcome: TruncationOutcome = await this.#options.channels.truncate(channelKey, {
      ...request,
      ...(expectedGeneration === undefined ? {} : { expectedGeneration }),
    });
    if (outcome.kind === 'nothing' && outcome.reason === 'stale') {
      // A splice (or another bot's cut) landed since the decision: decide again on what is stored.
      const current = await this.#options.channels.loadContext(channelKey);
      if (this.usage(current, settings, calibration) < policy.emergencyThreshold) return { context: current };
      outcome = await this.#options.channels.truncate(channelKey, {
        ...request,
        expectedGeneration: current.generation,
      });
      if (outcome.kind === 'nothing') return { context: current };
    }
    if (outcome.kind === 'nothing') {
      emit({
        event: 'compaction.skipped',
        channel: channelKey,
        tier: 'emergency',
        usage,
        reason: outcome.reason,
      });
      return {};
    }
    const context = await this.#options.channels.loadContext(channelKey);
    emit({
      event: 'compaction.emergency',
      channel: channelKey,
      tier: 'emergency',
      usage: this.usage(context, settings, calibration),
      fromSeq: outcome.plan.fromSeq,
      toSeq: outcome.plan.toSeq,
      tokensBefore: outcome.tokensBefore,
      tokensAfter: outcome.tokensAfter,
      messagesCompacted: outcome.plan.droppedMessages,
    });
    // The heal waits when a pass is in flight: the monitor queues it once that pass is done.
    if (jobInFlight) return { context };
    const heal = planHeal(context);
    const jobId = heal ? (await this.#enqueue(channelKey, heal, usage))?.jobId : undefined;
    return { context, ...(jobId ? { jobId } : {}) };
  }

  /**
   * Whether a pass of the channel is queued or running. When the queue cannot be reached (Redis
   * down) the answer is "yes": nothing is enqueued, and an emergency, which needs no queue, still
   * truncates.
   */
  async #inFlight(channelKey: string): Promise<boolean> {
    try {
      return await this.#options.queue.inFlight(channelKey);
    } catch {
      return true;
    }
  }

  async #enqueue(
    channelKey: string,
    plan: CompactionPlan,
    usage: number,
    focus?: string,
  ): Promise<{ jobId: string; deduplicated: boolean } | undefined> {
    try {
      return await this.#enqueueOrThrow(channelKey, plan, usage, focus);
    } catch (err) {
      // The queue or the run store is down: the pass is dropped, and the monitor asks again next turn.
      (this.#options.onEvent ?? (() => {}))({
        event: 'compaction.skipped',
        channel: channelKey,
        tier: plan.tier,
        usage,
        reason: 'queue_unavailable',
        error: err instanceof Error && 'code' in err ? String(err.code) : 'queue_error',
      });
      return undefined;
    }
  }

  async #enqueueOrThrow(
    channelKey: string,
    plan: CompactionPlan,
    usage: number,
    focus?: string,
  ): Promise<{ jobId: string; deduplicated: boolean }> {
    const job = {
      channelKey,
      tier: plan.tier,
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      generation: plan.generation,
      ...(focus === undefined ? {} : { focus }),
    };
    const outcome = await this.#options.queue.enqueue(job);
    this.#monitor(channelKey).enqueued(this.#now());
    // The worker may start the job before this row exists; it then creates the row itself, and this
    // insert is a no-op (runs are created once per job id).
    if (outcome.kind !== 'deduplicated') {
      await this.#options.runs.create({
        jobId: outcome.jobId,
        channelKey,
        tier: plan.tier,
        usage,
        fromSeq: plan.fromSeq,
        toSeq: plan.toSeq,
        generation: plan.generation,
      });
    }
    if (outcome.kind === 'escalated') {
      // Only a run that never started: a stalled job that already spliced keeps its record.
      await this.#options.runs.finish(
        outcome.replacedJobId,
        { status: 'skipped', error: 'escalated' },
        { onlyFrom: ['queued'] },
      );
    }
    (this.#options.onEvent ?? (() => {}))({
      event: outcome.kind === 'deduplicated' ? 'compaction.skipped' : 'compaction.enqueued',
      channel: channelKey,
      tier: plan.tier,
      usage,
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      jobId: outcome.jobId,
      ...(outcome.kind === 'deduplicated' ? { reason: 'in_flight' } : {}),
      ...(outcome.kind === 'escalated' ? { reason: `escalated ${outcome.replacedJobId}` } : {}),
    });
    return { jobId: outcome.jobId, deduplicated: outcome.kind === 'deduplicated' };
  }

  #monitor(channelKey: string): CompactionMonitor {
    let monitor = this.#monitors.get(channelKey);
    if (!monitor) {
      monitor = new CompactionMonitor();
      this.#monitors.set(channelKey, monitor);
    }
    return monitor;
  }
}
