/**
 * `ebb simulate`'s engine: a transcript replayed message by message through the decisions the bot
 * makes (`CompactionMonitor`, `decideOnSilence`, `admitPass`, the core's planners), with the queue,
 * the worker and the store played in memory and every step reported as an event. The parts:
 *
 * - `simulation.ts`: `Simulation`, the bot's `ChannelCompactor` carried out in memory: what each
 *   message and each silence lead to, and a pass's life from queued to started to landed.
 * - `simulated-channel.ts`: the channel's state as the store holds it (the working context, the
 *   archive, the stubs) and the prompt cache; it plans and applies a splice or a cut as the store does.
 * - `simulated-queue.ts`: the passes waiting or running, admitted as the real queues admit them.
 * - `summarize-from-archive.ts`: the summary a worker makes when a pass starts.
 * - `simulation-events.ts`: what the engine is given and what it reports (`--json` prints the events).
 * - `transcript-clock.ts`: the transcript's clock, which silences, cooldowns and `jobSeconds` run on.
 */
import type { EventTier } from '../decision/compaction-events.js';
import { CompactionMonitor, type MonitorTurn } from '../decision/compaction-monitor.js';
import type { AfterTurnAction } from '../decision/decide-after-turn.js';
import { decideOnSilence } from '../decision/decide-on-silence.js';
import type { ArchivedMessage, ContextView, Tier } from '../model/model.js';
import { summarySpanBound } from '../plans/plan-compaction.js';
import { roundUsage } from '../usage/round-usage.js';
import { SimulatedChannel } from './simulated-channel.js';
import { type SimJob, SimulatedQueue } from './simulated-queue.js';
import {
  type CompactionEventFields,
  compactionEvent,
  type SimulationEventName,
  type SimulationOptions,
  type SummaryEvent,
  type TranscriptMessage,
} from './simulation-events.js';
import { TranscriptClock } from './transcript-clock.js';

export class Simulation {
  readonly #options: SimulationOptions;
  /** The context, the archive and the prompt cache (`simulated-channel.ts`). */
  readonly #channel: SimulatedChannel;
  readonly #monitor = new CompactionMonitor();
  /** The largest summary span a pass writes. */
  readonly #summaryTokens: number;
  /** Ids of the newest tool calls whose results have not all arrived: the monitor waits for them. */
  readonly #awaitedResults = new Set<string>();
  /** Passes waiting or running (`simulated-queue.ts`). */
  readonly #queue: SimulatedQueue;
  #turn = 0;
  #now = 0;
  readonly #clock = new TranscriptClock();
  /** When the last reply prompt was sent: a silence is counted from it. */
  #lastPromptAt: number | undefined;
  /** The prompt whose silence was judged already (once per silence). */
  #silenceJudged: number | undefined;
  #peakUsage = 0;
  #peakBeforeMonitor = 0;
  readonly #totals = {
    tiers: { background: 0, aggressive: 0, emergency: 0 } as Record<Tier, number>,
    heals: 0,
    followUps: 0,
    escalations: 0,
    delayed: 0,
    coldPasses: 0,
    stale: 0,
    ineffective: 0,
    summarizerInputTokens: 0,
    summarizerOutputTokens: 0,
    microcompactions: 0,
    stubbedResults: 0,
  };

  constructor(options: SimulationOptions) {
    this.#options = options;
    this.#channel = new SimulatedChannel(options);
    this.#queue = new SimulatedQueue(options);
    this.#summaryTokens = summarySpanBound(options.tokenizer, options.policy.summaryMaxTokens);
  }

  /**
   * One message of the transcript: due passes start and land, the message is appended, the monitor
   * acts (after a tool call, once all its results are in).
   */
  turn(message: TranscriptMessage): void {
    this.#turn++;
    this.#now = this.#clock.advance(message.ts);
    this.#passOnSilence();
    this.#runJobs();

    const { archived, entry } = this.#channel.append(message);
    this.#peakBeforeMonitor = Math.max(this.#peakBeforeMonitor, this.#channel.usage());

    // The bot archives a tool call with all its results, then runs the monitor once.
    for (const call of message.toolCalls ?? []) this.#awaitedResults.add(call.id);
    if (message.toolCallId !== undefined) this.#awaitedResults.delete(message.toolCallId);
    if (this.#awaitedResults.size === 0) {
      const turn = this.#monitorTurn();
      this.#monitor.observe(turn);
      this.#act(turn);
    }
    // The bot answers a participant: its prompt is the context now (memories are not simulated).
    if (archived.role === 'user') {
      this.#channel.prompt(this.#now);
      this.#lastPromptAt = this.#now;
    }
    const usage = this.#channel.usage();
    this.#peakUsage = Math.max(this.#peakUsage, usage);
    this.#options.emit({
      type: 'message',
      seq: archived.seq,
      role: archived.role,
      tokens: entry.tokens,
      contextTokens: this.#channel.contextTokens(),
      usage: roundUsage(usage),
    });
  }

  /** The channel's working context now (for tests and tools; valid until the next turn). */
  view(): ContextView {
    return this.#channel.view();
  }

  /** The archived messages kept, oldest first: every one unless `retainArchive` is `unsummarized`. */
  archive(): readonly ArchivedMessage[] {
    return this.#channel.archive();
  }

  /** Lets the passes still in flight finish, then reports the totals. */
  finish(): SummaryEvent {
    for (let guard = 0; this.#queue.size > 0 && guard < 2 * this.#queue.size + 2; guard++) {
      for (const job of this.#queue.jobs()) if (!job.started) this.#start(job);
      this.#land(() => true);
    }
    const summary: SummaryEvent = {
      type: 'summary',
      messages: this.#turn,
      archived: this.#channel.archived,
      contextTokens: this.#channel.contextTokens(),
      peakUsage: roundUsage(this.#peakUsage),
      peakUsageBeforeMonitor: roundUsage(this.#peakBeforeMonitor),
      ...this.#totals,
      tiers: { ...this.#totals.tiers },
      promptCache: this.#channel.cacheTotals(),
    };
    this.#options.emit(summary);
    return summary;
  }

  /**
   * The bot's `ChannelCompactor.onSilence`: when the cache let the last prompt go before this
   * message, the pass `decideOnSilence` asks for was queued at that moment, and has landed by now if
   * the silence outlasted it (at once with `jobLatency`, which counts turns and none came between).
   */
  #passOnSilence(): void {
    const ttlSeconds = this.#options.cacheTtlSeconds;
    const last = this.#lastPromptAt;
    if (ttlSeconds === undefined || last === undefined || this.#silenceJudged === last) return;
    const coldAt = last + 1000 * ttlSeconds;
    if (this.#now <= coldAt) return;
    this.#silenceJudged = last;
    const action = decideOnSilence({
      ...this.#monitorTurn(),
      policy: this.#options.policy,
      inFlight: this.#queue.inFlight(),
      ineffectivePasses: this.#monitor.ineffectivePasses,
    });
    if (action.kind === 'none') return;
    this.#totals.coldPasses++;
    this.#event('triggered', action.plan.tier, { reason: 'cache_cold' });
    const queued = this.#enqueue(
      { kind: 'enqueue', mode: 'new', plan: action.plan, delayMs: 0, projectedUsage: 0 },
      coldAt,
      true,
    );
    if (queued && this.#options.jobSeconds === undefined) this.#land((job) => job === queued);
  }

  /** The bot's `ChannelCompactor.afterTurn`, carried out in memory. */
  #act(turn: MonitorTurn): void {
    const { policy } = this.#options;
    const { action, report } = this.#monitor.decide(policy, { ...turn, inFlight: this.#queue.inFlight() });
    this.#carryOut(action, report);
  }

  #carryOut(action: AfterTurnAction, report: boolean): void {
    switch (action.kind) {
      case 'none':
        return;
      case 'skip':
        if (report)
          this.#event('skipped', action.tier, {
            reason: action.reason,
            projectedUsage: roundUsage(action.projectedUsage),
          });
        return;
      case 'microcompact': {
        const tokensBefore = this.#channel.contextTokens();
        const stubbed = this.#channel.stub(action.seqs);
        this.#totals.microcompactions++;
        this.#totals.stubbedResults += stubbed;
        this.#event('microcompacted', 'microcompact', {
          fromSeq: action.seqs[0] ?? 0,
          toSeq: action.seqs.at(-1) ?? 0,
          tokensBefore,
          tokensAfter: this.#channel.contextTokens(),
        });
        // Decide again on the smaller context, as the bot does.
        this.#act(this.#monitorTurn());
        return;
      }
      case 'emergency':
        this.#event('triggered', 'emergency');
        if (this.#truncate()) {
          // Decide again on the cut context: the heal is queued when nothing else is in flight.
          this.#act(this.#monitorTurn());
        }
        return;
      case 'enqueue':
        if (action.mode !== 'heal')
          this.#event('triggered', action.plan.tier, { projectedUsage: roundUsage(action.projectedUsage) });
        this.#enqueue(action);
        return;
    }
  }

  #truncate(): boolean {
    const cut = this.#channel.truncate();
    if (cut.kind === 'nothing') {
      this.#event('skipped', 'emergency', { reason: cut.reason });
      return false;
    }
    const { plan, outcome } = cut;
    this.#totals.tiers.emergency++;
    this.#event('emergency', 'emergency', {
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      tokensBefore: outcome.tokensBefore + this.#options.reservedTokens,
      tokensAfter: outcome.tokensAfter + this.#options.reservedTokens,
    });
    return true;
  }

  /**
   * The queue's side: `admitPass`, as both queue drivers apply it. `at`: when it was queued (now,
   * or when a silence began). Returns the job queued, if any.
   */
  #enqueue(
    action: Extract<AfterTurnAction, { kind: 'enqueue' }>,
    at = this.#now,
    onSilence = false,
  ): SimJob | undefined {
    const { plan } = action;
    const admission = this.#queue.add(action, at, onSilence);
    if (admission.kind === 'deduplicated') {
      this.#event('skipped', plan.tier, { reason: 'in_flight', jobId: admission.jobId });
      return undefined;
    }
    const { job } = admission;
    const id = job.id;
    let reason: string | undefined;
    if (admission.replaced !== undefined) {
      this.#totals.escalations++;
      reason = `escalated ${admission.replaced}`;
    } else if (action.after !== undefined) {
      this.#totals.followUps++;
      reason = `follows ${action.after}`;
    }
    if (action.delayMs > 0) this.#totals.delayed++;
    this.#event('enqueued', plan.tier, {
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      jobId: id,
      ...(reason === undefined ? {} : { reason }),
    });
    if (action.delayMs === 0) this.#start(job, at);
    this.#land(() => false);
    return job;
  }

  /** Delayed passes whose time came start; passes whose time is up land. */
  #runJobs(): void {
    for (const job of this.#queue.jobs()) if (!job.started && this.#now >= job.startAt) this.#start(job);
    this.#land(() => false);
  }

  /** A worker picks the pass up: the summary is made from a snapshot of its range now. */
  #start(job: SimJob, at = this.#now): void {
    const range = { fromSeq: job.plan.fromSeq, toSeq: job.plan.toSeq, jobId: job.id };
    this.#event('started', job.plan.tier, range);
    const summary = this.#channel.summarize(job.id, job.plan);
    if ('stale' in summary) {
      this.#queue.remove(job);
      this.#totals.stale++;
      this.#event('stale', job.plan.tier, { ...range, reason: summary.stale });
      return;
    }
    this.#totals.summarizerInputTokens += summary.inputTokens;
    this.#totals.summarizerOutputTokens += summary.outputTokens;
    job.started = { turn: this.#turn, at, result: summary.result };
    if (job.mode === 'heal') this.#totals.heals++;
    else this.#totals.tiers[job.plan.tier]++;
  }

  /**
   * Splices every started pass that is done (or that `force` says to finish now), oldest range
   * first, and tells the monitor once whether the landings of this turn helped.
   */
  #land(force: (job: SimJob) => boolean): void {
    const before = this.#channel.usage();
    let landed = false;
    for (const job of this.#queue.jobs()) {
      if (job.started && (this.#queue.due(job, this.#now, this.#turn) || force(job)))
        landed = this.#finish(job) || landed;
    }
    if (!landed) return;
    const after = this.#channel.usage();
    if (!this.#monitor.shrunk(this.#options.policy, before, after, this.#channel.reservedUsage()))
      this.#totals.ineffective++;
  }

  /** Returns whether a background or aggressive pass landed. */
  #finish(job: SimJob): boolean {
    const result = job.started?.result;
    if (!result) return false;
    const range = { fromSeq: job.plan.fromSeq, toSeq: job.plan.toSeq, jobId: job.id };
    const splice = this.#channel.splice(result);
    // A follow-up done before the pass ahead of it waits for it (the worker defers the job).
    if (splice.kind === 'gap' && job.after !== undefined && this.#queue.has(job.after)) return false;
    this.#queue.remove(job);
    if (splice.kind !== 'splice') {
      this.#totals.stale++;
      this.#event('stale', job.plan.tier, { ...range, reason: splice.reason });
      return false;
    }
    const { outcome } = splice;
    // A pass started in a silence spliced when it was done, not at the message that ended the
    // silence: its hours would read as the channel's pass duration and start every later pass early.
    const at = job.onSilence ? Math.min(this.#now, this.#queue.doneAt(job, this.#now)) : this.#now;
    this.#monitor.landed({ tier: job.plan.tier, latencyMs: at - job.enqueuedAt, at });
    this.#event('completed', job.plan.tier, {
      ...range,
      tokensBefore: outcome.tokensBefore + this.#options.reservedTokens,
      tokensAfter: outcome.tokensAfter + this.#options.reservedTokens,
    });
    return job.plan.tier !== 'emergency';
  }

  #monitorTurn(): MonitorTurn {
    return {
      context: this.#channel.view(),
      usage: this.#channel.usage(),
      usagePerToken: 1 / (this.#options.contextWindow - this.#options.maxOutputTokens),
      summaryTokens: this.#summaryTokens,
      now: this.#now,
    };
  }

  #event(event: SimulationEventName, tier: EventTier, fields: CompactionEventFields = {}): void {
    const at = { seq: this.#channel.headSeq, usage: roundUsage(this.#channel.usage()) };
    this.#options.emit(compactionEvent(event, tier, at, fields));
  }
}
