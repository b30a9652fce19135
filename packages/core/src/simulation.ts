/**
 * `ebb simulate`'s engine: a channel replayed turn by turn through the real core (working context,
 * monitor, plans, splice) with an in-memory archive, a job runner whose jobs finish `jobLatency`
 * turns after they start (so emergency truncations can race them), and the extractive summarizer.
 * Pure and synchronous: the CLI reads the transcript and prints the events.
 */
import { CompactionMonitor } from './compaction-monitor.js';
import { InvariantError } from './errors.js';
import { summarizeExtractive } from './extractive-summary.js';
import { measureMessage } from './measure-message.js';
import type { ArchivedMessage, ContextView, Tier } from './model.js';
import { type CompactionPlan, planCompaction, planHeal } from './plan-compaction.js';
import { planEmergencyTruncation } from './plan-emergency-truncation.js';
import { planSplice, type SummaryResult } from './plan-splice.js';
import type { CompactionPolicy } from './policy.js';
import { spanTokens, TRUNCATION_MARKER } from './render-context.js';
import { chatMessageTokens, type Tokenizer, UNCALIBRATED, usageOf } from './tokens.js';
import { WorkingContext } from './working-context.js';

export interface TranscriptMessage {
  readonly role: 'user' | 'assistant';
  readonly author: string;
  readonly text: string;
  readonly ts?: string;
}

export interface SimulationOptions {
  readonly policy: CompactionPolicy;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  /** Tokens the prompt spends on the system prompt and the memory recall budget. */
  readonly reservedTokens: number;
  readonly tokenizer: Tokenizer;
  /** Turns between a job's start and its result. */
  readonly jobLatency: number;
  readonly emit: (event: SimulationEvent) => void;
}

export type SimulationEventName =
  | 'triggered'
  | 'enqueued'
  | 'skipped'
  | 'started'
  | 'completed'
  | 'stale'
  | 'emergency'
  | 'failed';

export interface MessageEvent {
  readonly type: 'message';
  readonly seq: number;
  readonly role: string;
  readonly tokens: number;
  readonly contextTokens: number;
  readonly usage: number;
}

export interface CompactionEvent {
  readonly type: 'compaction';
  readonly event: SimulationEventName;
  readonly tier: Tier;
  /** The turn (seq of the newest message) it happened on. */
  readonly seq: number;
  readonly fromSeq: number | null;
  readonly toSeq: number | null;
  readonly usage: number;
  readonly tokensBefore: number | null;
  readonly tokensAfter: number | null;
  readonly jobId?: string;
  readonly reason?: string;
}

export interface SummaryEvent {
  readonly type: 'summary';
  readonly messages: number;
  readonly archived: number;
  readonly contextTokens: number;
  /** Highest usage after the monitor acted on a turn. */
  readonly peakUsage: number;
  /** Highest usage a new message caused before the monitor acted (above 1: an emergency cut was needed). */
  readonly peakUsageBeforeMonitor: number;
  /** Passes started per tier; `emergency` counts truncations. */
  readonly tiers: Record<Tier, number>;
  /** Passes that healed truncated spans. */
  readonly heals: number;
  readonly stale: number;
  /** Completed passes that left usage at or above the background threshold. */
  readonly ineffective: number;
  readonly summarizerInputTokens: number;
  readonly summarizerOutputTokens: number;
}

export type SimulationEvent = MessageEvent | CompactionEvent | SummaryEvent;

interface RunningJob {
  readonly id: string;
  readonly plan: CompactionPlan;
  readonly heal: boolean;
  readonly finishTurn: number;
  readonly result: SummaryResult;
}

export class Simulation {
  readonly #options: SimulationOptions;
  readonly #context = new WorkingContext();
  readonly #monitor = new CompactionMonitor();
  readonly #archive: ArchivedMessage[] = [];
  /** Tokens of each archived message, whole (the context may hold a clipped copy). */
  readonly #archiveTokens: number[] = [];
  readonly #markerTokens: number;
  #job: RunningJob | undefined;
  #jobCount = 0;
  #turn = 0;
  #now = 0;
  #peakUsage = 0;
  #peakBeforeMonitor = 0;
  readonly #totals = {
    tiers: { background: 0, aggressive: 0, emergency: 0 } as Record<Tier, number>,
    heals: 0,
    stale: 0,
    ineffective: 0,
    summarizerInputTokens: 0,
    summarizerOutputTokens: 0,
  };

  constructor(options: SimulationOptions) {
    this.#options = options;
    this.#markerTokens = chatMessageTokens(options.tokenizer, TRUNCATION_MARKER);
  }

  /** One message of the transcript: due jobs finish, the message is appended, the monitor acts. */
  turn(message: TranscriptMessage): void {
    this.#turn++;
    this.#advanceClock(message.ts);
    if (this.#job && this.#job.finishTurn <= this.#turn) this.#finish(this.#job);

    const { tokenizer, policy } = this.#options;
    const archived: ArchivedMessage = { seq: this.#context.headSeq + 1, ...message };
    const { entry, archivedTokens } = measureMessage(archived, tokenizer, policy.messageMaxTokens);
    this.#archive.push(archived);
    this.#archiveTokens.push(archivedTokens);
    this.#context.append(entry);
    this.#peakBeforeMonitor = Math.max(this.#peakBeforeMonitor, this.#usage());

    this.#monitorTurn();
    const usage = this.#usage();
    this.#peakUsage = Math.max(this.#peakUsage, usage);
    this.#options.emit({
      type: 'message',
      seq: archived.seq,
      role: archived.role,
      tokens: entry.tokens,
      contextTokens: this.#contextTokens(),
      usage: round(usage),
    });
  }

  /** The channel's working context now (for tests and tools; valid until the next turn). */
  view(): ContextView {
    return this.#context.view();
  }

  /** Every archived message, oldest first. */
  archive(): readonly ArchivedMessage[] {
    return this.#archive;
  }

  /** Lets a job still in flight finish, then reports the totals. */
  finish(): SummaryEvent {
    if (this.#job) this.#finish(this.#job);
    const summary: SummaryEvent = {
      type: 'summary',
      messages: this.#turn,
      archived: this.#archive.length,
      contextTokens: this.#contextTokens(),
      peakUsage: round(this.#peakUsage),
      peakUsageBeforeMonitor: round(this.#peakBeforeMonitor),
      ...this.#totals,
      tiers: { ...this.#totals.tiers },
    };
    this.#options.emit(summary);
    return summary;
  }

  #monitorTurn(): void {
    const { policy } = this.#options;
    const usage = this.#usage();
    const { decision, report } = this.#monitor.decide(policy, {
      usage,
      now: this.#now,
      jobInFlight: this.#job !== undefined,
      needsHeal: this.#context.view().spans.some((s) => s.kind === 'truncated'),
    });
    switch (decision.kind) {
      case 'none':
        return;
      case 'skip':
        if (report) this.#event('skipped', decision.tier, { reason: decision.reason });
        return;
      case 'emergency':
        this.#event('triggered', 'emergency');
        this.#truncate();
        return;
      case 'heal': {
        const plan = planHeal(this.#context.view());
        if (plan) this.#enqueue(plan, true);
        return;
      }
      case 'compact': {
        this.#event('triggered', decision.tier);
        const fraction =
          decision.tier === 'aggressive' ? policy.aggressiveFraction : policy.backgroundFraction;
        const result = planCompaction({
          context: this.#context.view(),
          tier: decision.tier,
          fraction,
          protectRecent: policy.protectRecent,
        });
        if (result.kind === 'nothing') {
          // Counted as a pass that did not help, so a channel that cannot shrink stops trying.
          this.#monitor.enqueued(this.#now);
          this.#monitor.passCompleted(policy, usage);
          this.#event('skipped', decision.tier, { reason: result.reason });
          return;
        }
        this.#enqueue(result.plan, false);
        return;
      }
    }
  }

  #truncate(): void {
    const { policy } = this.#options;
    const plan = planEmergencyTruncation({
      context: this.#context.view(),
      fraction: policy.emergencyFraction,
      protectRecent: policy.protectRecent,
      markerTokens: this.#markerTokens,
    });
    if (plan.kind === 'nothing') {
      this.#event('skipped', 'emergency', { reason: plan.reason });
      return;
    }
    const outcome = this.#context.applyTruncation(plan);
    this.#totals.tiers.emergency++;
    this.#event('emergency', 'emergency', {
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      tokensBefore: outcome.tokensBefore + this.#options.reservedTokens,
      tokensAfter: outcome.tokensAfter + this.#options.reservedTokens,
    });
    // The marker is healed by a pass over the archive, now if the worker is free, else after its job.
    if (!this.#job) {
      const heal = planHeal(this.#context.view());
      if (heal) this.#enqueue(heal, true);
    }
  }

  #enqueue(plan: CompactionPlan, heal: boolean): void {
    const id = `job-${++this.#jobCount}`;
    const range = { fromSeq: plan.fromSeq, toSeq: plan.toSeq, jobId: id };
    this.#monitor.enqueued(this.#now);
    this.#event('enqueued', plan.tier, range);
    // One worker, always free here: the job starts at once from a snapshot of the range.
    const result = this.#summarize(id, plan);
    this.#job = { id, plan, heal, finishTurn: this.#turn + this.#options.jobLatency, result };
    if (heal) this.#totals.heals++;
    else this.#totals.tiers[plan.tier]++;
    this.#event('started', plan.tier, range);
    if (this.#options.jobLatency === 0) this.#finish(this.#job);
  }

  /** What the worker does at job start: folds the summaries in range and reads the rest from the archive. */
  #summarize(jobId: string, plan: CompactionPlan): SummaryResult {
    const { tokenizer, policy } = this.#options;
    const view = this.#context.view();
    const earlier: string[] = [];
    const messages: ArchivedMessage[] = [];
    let inputTokens = 0;
    let seq = plan.fromSeq;
    for (const span of view.spans) {
      if (span.toSeq > plan.toSeq) break;
      if (span.kind === 'summary') {
        earlier.push(span.text);
        inputTokens += span.tokens;
        seq = span.toSeq + 1;
      } else {
        for (; seq <= span.toSeq; seq++) inputTokens += this.#takeArchived(seq, messages);
      }
    }
    for (; seq <= plan.toSeq; seq++) inputTokens += this.#takeArchived(seq, messages);

    const text = summarizeExtractive({
      earlierSummaries: earlier,
      messages,
      maxTokens: policy.summaryMaxTokens,
      tokenizer,
    });
    this.#totals.summarizerInputTokens += inputTokens;
    this.#totals.summarizerOutputTokens += tokenizer.count(text);
    return {
      jobId,
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      text,
      tokens: spanTokens(tokenizer, { kind: 'summary', fromSeq: plan.fromSeq, toSeq: plan.toSeq, text }),
    };
  }

  #takeArchived(seq: number, into: ArchivedMessage[]): number {
    const message = this.#archive[seq - 1];
    if (!message) throw new InvariantError(`seq ${seq} is not archived`);
    into.push(message);
    return this.#archiveTokens[seq - 1] ?? 0;
  }

  #finish(job: RunningJob): void {
    this.#job = undefined;
    const range = { fromSeq: job.plan.fromSeq, toSeq: job.plan.toSeq, jobId: job.id };
    const plan = planSplice(this.#context.view(), job.result);
    if (plan.kind !== 'splice') {
      this.#totals.stale++;
      this.#event('stale', job.plan.tier, { ...range, reason: plan.reason });
      return;
    }
    const outcome = this.#context.applySplice(plan);
    const effective = this.#monitor.passCompleted(this.#options.policy, this.#usage());
    if (!effective) this.#totals.ineffective++;
    this.#event('completed', job.plan.tier, {
      ...range,
      tokensBefore: outcome.tokensBefore + this.#options.reservedTokens,
      tokensAfter: outcome.tokensAfter + this.#options.reservedTokens,
      ...(effective ? {} : { reason: 'ineffective' }),
    });
  }

  #event(
    event: SimulationEventName,
    tier: Tier,
    fields: Partial<
      Pick<CompactionEvent, 'fromSeq' | 'toSeq' | 'tokensBefore' | 'tokensAfter' | 'jobId' | 'reason'>
    > = {},
  ): void {
    this.#options.emit({
      type: 'compaction',
      event,
      tier,
      seq: this.#context.headSeq,
      fromSeq: fields.fromSeq ?? null,
      toSeq: fields.toSeq ?? null,
      usage: round(this.#usage()),
      tokensBefore: fields.tokensBefore ?? null,
      tokensAfter: fields.tokensAfter ?? null,
      ...(fields.jobId === undefined ? {} : { jobId: fields.jobId }),
      ...(fields.reason === undefined ? {} : { reason: fields.reason }),
    });
  }

  #contextTokens(): number {
    return this.#context.tokens + this.#options.reservedTokens;
  }

  #usage(): number {
    return usageOf({
      contextTokens: this.#context.tokens,
      reservedTokens: this.#options.reservedTokens,
      contextWindow: this.#options.contextWindow,
      maxOutputTokens: this.#options.maxOutputTokens,
      calibration: UNCALIBRATED,
    });
  }

  /** Simulated time: the transcript's timestamps when they parse, never going backwards; else a second a turn. */
  #advanceClock(ts: string | undefined): void {
    const parsed = ts === undefined ? Number.NaN : Date.parse(ts);
    this.#now = Number.isNaN(parsed) ? this.#now + 1000 : Math.max(this.#now, parsed);
  }
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
