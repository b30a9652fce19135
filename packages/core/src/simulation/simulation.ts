import type { EventTier } from '../decision/compaction-events.js';
import { CompactionMonitor, type MonitorTurn } from '../decision/compaction-monitor.js';
import type { AfterTurnAction } from '../decision/decide-after-turn.js';
import { decideOnSilence } from '../decision/decide-on-silence.js';
import { measureMessage } from '../model/measure-message.js';
import type { ArchivedMessage, ContextView, Span, Tier } from '../model/model.js';
import { chatMessageTokens, UNCALIBRATED, usageOf } from '../model/tokens.js';
import { WorkingContext } from '../model/working-context.js';
import { summarySpanBound } from '../plans/plan-compaction.js';
import { planEmergencyTruncation } from '../plans/plan-emergency-truncation.js';
import { stubToolResults } from '../plans/plan-microcompaction.js';
import { planSplice, rawTokensThrough } from '../plans/plan-splice.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import { TRUNCATION_MARKER } from '../rendering/render-context.js';
import { type CacheBreakCause, PrefixCacheMeter } from '../usage/prefix-cache.js';
import { roundUsage } from '../usage/round-usage.js';
import { type SimJob, SimulatedQueue } from './simulated-queue.js';
import {
  type CompactionEventFields,
  compactionEvent,
  type SimulationEventName,
  type SimulationOptions,
  type SummaryEvent,
  type TranscriptMessage,
} from './simulation-events.js';
import { summarizeFromArchive } from './summarize-from-archive.js';
import { TranscriptClock } from './transcript-clock.js';

export class Simulation {
  readonly #options: SimulationOptions;
  readonly #context = new WorkingContext();
  readonly #monitor = new CompactionMonitor();
  /** Archived messages from seq `#archiveBase + 1` on (all of them unless `retainArchive` drops some). */
  #archive: ArchivedMessage[] = [];
  /** Tokens of each archived message, whole (the context may hold a clipped copy). */
  #archiveTokens: number[] = [];
  #archiveBase = 0;
  readonly #markerTokens: number;
  /** The largest summary span a pass writes. */
  readonly #summaryTokens: number;
  /** Ids of the newest tool calls whose results have not all arrived: the monitor waits for them. */
  readonly #awaitedResults = new Set<string>();
  /** Stubs microcompaction put in place of tool results, by seq: what a later pass summarizes. */
  readonly #stubs = new Map<number, { readonly text: string; readonly tokens: number }>();
  /** Passes waiting or running (`simulated-queue.ts`). */
  readonly #queue: SimulatedQueue;
  /** The prompts an answer to every participant's message would send, as a prefix cache sees them. */
  readonly #cache: PrefixCacheMeter;
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
    this.#cache = new PrefixCacheMeter(
      options.cacheTtlSeconds === undefined ? {} : { ttlMs: 1000 * options.cacheTtlSeconds },
    );
    this.#options = options;
    this.#queue = new SimulatedQueue(options);
    this.#markerTokens = chatMessageTokens(options.tokenizer, TRUNCATION_MARKER);
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

    const { tokenizer, policy } = this.#options;
    const archived: ArchivedMessage = { seq: this.#context.headSeq + 1, ...message };
    const { entry, archivedTokens } = measureMessage(archived, tokenizer, policy.messageMaxTokens);
    this.#archive.push(archived);
    this.#archiveTokens.push(archivedTokens);
    this.#context.append(entry);
    this.#peakBeforeMonitor = Math.max(this.#peakBeforeMonitor, this.#usage());

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
      this.#cache.prompt(this.#promptHead() + this.#context.tokens, this.#now);
      this.#lastPromptAt = this.#now;
    }
    const usage = this.#usage();
    this.#peakUsage = Math.max(this.#peakUsage, usage);
    this.#options.emit({
      type: 'message',
      seq: archived.seq,
      role: archived.role,
      tokens: entry.tokens,
      contextTokens: this.#contextTokens(),
      usage: roundUsage(usage),
    });
  }

  /** The channel's working context now (for tests and tools; valid until the next turn). */
  view(): ContextView {
    return this.#context.view();
  }

  /** The archived messages kept, oldest first: every one unless `retainArchive` is `unsummarized`. */
  archive(): readonly ArchivedMessage[] {
    return this.#archive;
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
      archived: this.#archiveBase + this.#archive.length,
      contextTokens: this.#contextTokens(),
      peakUsage: roundUsage(this.#peakUsage),
      peakUsageBeforeMonitor: roundUsage(this.#peakBeforeMonitor),
      ...this.#totals,
      tiers: { ...this.#totals.tiers },
      promptCache: this.#cache.totals(),
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
      inFlight: this.#inFlight(),
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
    const { action, report } = this.#monitor.decide(policy, { ...turn, inFlight: this.#inFlight() });
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
        const stubs = stubToolResults(
          this.#context.view().raw,
          action.seqs,
          this.#options.tokenizer,
          this.#options.readHistory ?? true,
        );
        const tokensBefore = this.#contextTokens();
        const first = stubs[0]?.seq;
        if (first !== undefined) this.#brokeAtRaw(first, 'microcompaction');
        this.#context.replaceRaw(stubs);
        for (const stub of stubs) this.#stubs.set(stub.seq, { text: stub.text, tokens: stub.tokens });
        this.#totals.microcompactions++;
        this.#totals.stubbedResults += stubs.length;
        this.#event('microcompacted', 'microcompact', {
          fromSeq: action.seqs[0] ?? 0,
          toSeq: action.seqs.at(-1) ?? 0,
          tokensBefore,
          tokensAfter: this.#contextTokens(),
        });
        // Decide again on the smaller context, as the bot does.
        const { action: next, report: again } = this.#monitor.decide(this.#options.policy, {
          ...this.#monitorTurn(),
          inFlight: this.#inFlight(),
        });
        this.#carryOut(next, again);
        return;
      }
      case 'emergency':
        this.#event('triggered', 'emergency');
        if (this.#truncate()) {
          // Decide again on the cut context: the heal is queued when nothing else is in flight.
          const { action: next, report: again } = this.#monitor.decide(this.#options.policy, {
            ...this.#monitorTurn(),
            inFlight: this.#inFlight(),
          });
          this.#carryOut(next, again);
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
    const { policy } = this.#options;
    const plan = planEmergencyTruncation({
      context: this.#context.view(),
      fraction: policy.emergencyFraction,
      protectRecent: policy.protectRecent,
      markerTokens: this.#markerTokens,
    });
    if (plan.kind === 'nothing') {
      this.#event('skipped', 'emergency', { reason: plan.reason });
      return false;
    }
    const spans = [...this.#context.view().spans];
    const outcome = this.#context.applyTruncation(plan);
    this.#brokeAtSpans(spans, 'truncation');
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
    const summary = summarizeFromArchive({
      jobId: job.id,
      plan: job.plan,
      context: this.#context.view(),
      archive: this.#archive,
      archiveTokens: this.#archiveTokens,
      archiveBase: this.#archiveBase,
      stubs: this.#stubs,
      tokenizer: this.#options.tokenizer,
      maxTokens: this.#options.policy.summaryMaxTokens,
    });
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
    const before = this.#usage();
    let landed = false;
    for (const job of this.#queue.jobs()) {
      if (job.started && (this.#queue.due(job, this.#now, this.#turn) || force(job)))
        landed = this.#finish(job) || landed;
    }
    if (landed && !this.#monitor.shrunk(this.#options.policy, before, this.#usage(), this.#reservedUsage()))
      this.#totals.ineffective++;
  }

  /** Returns whether a background or aggressive pass landed. */
  #finish(job: SimJob): boolean {
    const result = job.started?.result;
    if (!result) return false;
    const range = { fromSeq: job.plan.fromSeq, toSeq: job.plan.toSeq, jobId: job.id };
    const view = this.#context.view();
    const plan = planSplice(view, result, rawTokensThrough(view.raw, result.toSeq));
    // A follow-up done before the pass ahead of it waits for it (the worker defers the job).
    if (plan.kind === 'gap' && job.after !== undefined && this.#queue.has(job.after)) return false;
    this.#queue.remove(job);
    if (plan.kind !== 'splice') {
      this.#totals.stale++;
      this.#event('stale', job.plan.tier, { ...range, reason: plan.reason });
      return false;
    }
    const spans = [...this.#context.view().spans];
    const outcome = this.#context.applySplice(plan);
    this.#brokeAtSpans(spans, 'splice');
    if (this.#options.retainArchive === 'unsummarized') this.#forgetSummarized();
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

  /**
   * Drops the archived messages the leading summary spans cover: a pass reads a summary in its range
   * instead of its messages (`planSnapshot`), and a summarized seq is never raw or truncated again,
   * so no pass reads them. Keeps a long replay's memory bounded by what is not summarized yet.
   */
  #forgetSummarized(): void {
    let covered = 0;
    for (const span of this.#context.view().spans) {
      if (span.kind !== 'summary' || span.fromSeq !== covered + 1) break;
      covered = span.toSeq;
    }
    const drop = covered - this.#archiveBase;
    if (drop <= 0) return;
    this.#archive = this.#archive.slice(drop);
    this.#archiveTokens = this.#archiveTokens.slice(drop);
    this.#archiveBase = covered;
    for (const seq of this.#stubs.keys()) if (seq <= covered) this.#stubs.delete(seq);
  }

  #inFlight(): PassInFlight[] {
    return this.#queue.inFlight();
  }

  #monitorTurn(): MonitorTurn {
    return {
      context: this.#context.view(),
      usage: this.#usage(),
      usagePerToken: 1 / (this.#options.contextWindow - this.#options.maxOutputTokens),
      summaryTokens: this.#summaryTokens,
      now: this.#now,
    };
  }

  #event(event: SimulationEventName, tier: EventTier, fields: CompactionEventFields = {}): void {
    const at = { seq: this.#context.headSeq, usage: roundUsage(this.#usage()) };
    this.#options.emit(compactionEvent(event, tier, at, fields));
  }

  /** Tokens every prompt starts with: the system prompt and the tools (`promptHeadTokens`). */
  #promptHead(): number {
    return this.#options.promptHeadTokens ?? this.#options.reservedTokens;
  }

  /** The prompt changed from the first span that differs from `before` on. */
  #brokeAtSpans(before: readonly Span[], cause: CacheBreakCause): void {
    const after = this.#context.view().spans;
    let at = this.#promptHead();
    for (let i = 0; i < before.length && i < after.length && sameSpan(before[i], after[i]); i++) {
      at += after[i]?.tokens ?? 0;
    }
    this.#cache.broke(at, cause);
  }

  /** The prompt changed from the raw message `seq` on. */
  #brokeAtRaw(seq: number, cause: CacheBreakCause): void {
    const view = this.#context.view();
    let at = this.#promptHead() + view.spans.reduce((n, span) => n + span.tokens, 0);
    for (const m of view.raw) {
      if (m.seq >= seq) break;
      at += m.tokens;
    }
    this.#cache.broke(at, cause);
  }

  #contextTokens(): number {
    return this.#context.tokens + this.#options.reservedTokens;
  }

  #usage(contextTokens = this.#context.tokens): number {
    return usageOf({
      contextTokens,
      reservedTokens: this.#options.reservedTokens,
      contextWindow: this.#options.contextWindow,
      maxOutputTokens: this.#options.maxOutputTokens,
      calibration: UNCALIBRATED,
    });
  }

  /** Usage of the reserve alone: what no pass can free. */
  #reservedUsage(): number {
    return this.#usage(0);
  }
}

function sameSpan(a: Span | undefined, b: Span | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.kind === b.kind &&
    a.fromSeq === b.fromSeq &&
    a.toSeq === b.toSeq &&
    a.tokens === b.tokens &&
    (a.kind !== 'summary' || (b.kind === 'summary' && a.text === b.text))
  );
}
