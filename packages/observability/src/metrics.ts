/**
 * Ebb's Prometheus metrics (prom-client), one registry per process, fed by three recorders:
 *
 * - `onCompactionEvent`: the compaction event stream (`compaction-events.ts`) → pass counters, the
 *   pass duration histogram, tokens saved, emergency truncations, summarizer fallbacks, memories
 *   the model proposed that were rejected or repaired (`compaction.memories_invalid`), passes a
 *   channel's circuit breaker refused (`compaction.skipped` with reason `circuit_open`);
 * - `onLlmCalls`: the `LlmCall`s of a pass or a reply → calls, tokens and errors by purpose, and
 *   their cost at the `[prices]` of config.toml (the `prices` option, read at each call so a reload
 *   applies), in `llm-metrics.ts`;
 * - `onTurn`: one sample per bot turn → turns, turn duration, context usage after the turn;
 * - `onToolCall`: one sample per tool call of the model → calls by tool and outcome, call duration,
 *   in `tool-metrics.ts`;
 * - `onMessageChange`: one sample per deletion or edit a platform reported → changes by kind and
 *   outcome, and what they reached, in `message-change-metrics.ts`;
 * - `onBudget`: one sample per turn at a spend limit → limits reached, turns limited, in
 *   `budget-metrics.ts`.
 *
 * The queue gauges are read on scrape from a `QueueStats` source (`observeQueue`), labelled with the
 * queue's name (`compaction`) so that a scrape that cannot read them leaves them out rather than
 * reporting a stale or zero value.
 *
 * Cardinality is bounded: labels are tiers, outcomes, purposes, platforms, job states and LLM error
 * codes; no channel, job or user ever becomes a label. Every compaction event is recorded by the
 * process that emits it (the bot: triggers, skips, emergencies; the worker: started, completed,
 * failed, stale), so Prometheus sums the bot's and the workers' series without double counting.
 */
import {
  type CompactionEventName,
  type CompactionLogEvent,
  type LlmCall,
  MEMORY_REJECT_REASONS,
  MEMORY_REPAIR_REASONS,
  PLATFORMS,
  type Platform,
  type Tier,
  withTimeout,
} from '@ebb/core';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { type BudgetSample, budgetMetrics } from './budget-metrics.js';
import { type ContextCacheStats, contextCacheMetrics } from './context-cache-metrics.js';
import { llmMetrics, type PriceTable } from './llm-metrics.js';
import {
  type MessageChangeSample,
  messageChangeMetrics,
  type RetentionSample,
  retentionMetrics,
} from './message-change-metrics.js';
import { count, seconds } from './metric-values.js';
import type { QueueStats } from './queue-stats.js';
import { type ToolCallSample, toolMetrics } from './tool-metrics.js';

export type { ContextCacheStats } from './context-cache-metrics.js';
export type { LlmPurpose, PriceTable } from './llm-metrics.js';
export { TOOL_DURATION_BUCKETS, type ToolCallSample } from './tool-metrics.js';

export interface MetricsOptions {
  /** The registry to register in (default a new one); register `createMetrics` once per registry. */
  readonly registry?: Registry;
  /** The queue gauges' source; also settable later with `observeQueue`. */
  readonly queue?: QueueStats;
  /** prom-client's process metrics (CPU, memory, event loop lag, GC) in the same registry. */
  readonly processMetrics?: boolean;
  /** Bound on reading the queue stats during a scrape; past it the queue gauges are left out. */
  readonly queueStatsTimeoutMs?: number;
  /**
   * `[prices."<model>"]` of config.toml (USD per million tokens), read at each call so a reloaded
   * config applies; calls of a model it does not price count in `ebb_llm_unpriced_calls_total`.
   */
  readonly prices?: () => PriceTable;
}

export const DEFAULT_METRICS_OPTIONS = {
  processMetrics: true,
  queueStatsTimeoutMs: 2_000,
} as const satisfies Required<Pick<MetricsOptions, 'processMetrics' | 'queueStatsTimeoutMs'>>;

/** What became of a pass (or a trigger that did not become one), as `ebb_compaction_passes_total` counts it. */
export type PassOutcome = 'completed' | 'stale' | 'failed' | 'skipped' | 'emergency';

export interface TurnSample {
  readonly platform: Platform;
  /** Whether the bot replied (false: the message was only archived). */
  readonly answered: boolean;
  /** Context usage after the turn (0…1, above 1 when over the window). */
  readonly usage: number;
  readonly durationMs: number;
}

export interface EbbMetrics {
  readonly registry: Registry;
  /** The exposition format's content type, for the `/metrics` response. */
  readonly contentType: string;
  onCompactionEvent(event: CompactionLogEvent): void;
  onLlmCalls(calls: readonly LlmCall[]): void;
  onTurn(turn: TurnSample): void;
  onToolCall(call: ToolCallSample): void;
  onMessageChange(change: MessageChangeSample): void;
  /** One channel a retention sweep took messages back from. */
  onRetention(sweep: RetentionSample): void;
  /** One turn of a channel at a spend limit. */
  onBudget(sample: BudgetSample): void;
  /** Reads the queue gauges from `stats` from the next scrape on (undefined: no queue gauges). */
  observeQueue(stats: QueueStats | undefined): void;
  /** Reads the `ebb_context_cache_*` series from `stats` from the next scrape on (the bot's process). */
  observeContextCache(stats: (() => ContextCacheStats) | undefined): void;
  metricsText(): Promise<string>;
}

/** Usage as a fraction of the window: tenths, plus the default thresholds (background, aggressive, emergency). */
export const USAGE_BUCKETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1] as const;
/** A pass is one or a few LLM calls over up to a window of text: seconds to minutes. */
export const PASS_DURATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300] as const;
/** A turn is a store round trip and, when answered, one model reply. */
export const TURN_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60] as const;

const TIERS = ['background', 'aggressive', 'emergency'] as const satisfies readonly Tier[];
const REJECT_REASONS: ReadonlySet<string> = new Set(MEMORY_REJECT_REASONS);
const REPAIR_REASONS: ReadonlySet<string> = new Set(MEMORY_REPAIR_REASONS);
/** The skip reason of the compaction processor when a channel's circuit breaker is open. */
const CIRCUIT_OPEN = 'circuit_open';

/**
 * The pass outcome an event reports, or undefined for the steps in between (triggered, enqueued,
 * started). A failed try counts as `failed` each time (BullMQ may retry the job and complete it).
 */
export function passOutcome(event: CompactionEventName): PassOutcome | undefined {
  switch (event) {
    case 'compaction.completed':
      return 'completed';
    case 'compaction.stale':
      return 'stale';
    case 'compaction.failed':
      return 'failed';
    case 'compaction.skipped':
      return 'skipped';
    case 'compaction.emergency':
      return 'emergency';
    case 'compaction.triggered':
    case 'compaction.enqueued':
    case 'compaction.started':
    case 'compaction.restarted':
    case 'compaction.reconciled':
    case 'compaction.memories_invalid':
    case 'compaction.microcompacted':
      return undefined;
  }
}

export function createMetrics(options: MetricsOptions = {}): EbbMetrics {
  const registry = options.registry ?? new Registry();
  const registers = [registry];
  const statsTimeoutMs = options.queueStatsTimeoutMs ?? DEFAULT_METRICS_OPTIONS.queueStatsTimeoutMs;
  const prices = options.prices ?? ((): PriceTable => ({}));
  let queue = options.queue;
  if (options.processMetrics ?? DEFAULT_METRICS_OPTIONS.processMetrics)
    collectDefaultMetrics({ register: registry });

  // Compaction.
  const passes = new Counter({
    name: 'ebb_compaction_passes_total',
    help: 'Compaction passes by tier and outcome (failed counts every failed try; skipped counts triggers that did not run).',
    labelNames: ['tier', 'outcome'] as const,
    registers,
  });
  const passDuration = new Histogram({
    name: 'ebb_compaction_pass_duration_seconds',
    help: 'Duration of completed compaction passes, from the worker taking the job to the splice.',
    labelNames: ['tier'] as const,
    buckets: [...PASS_DURATION_BUCKETS],
    registers,
  });
  const tokensSaved = new Counter({
    name: 'ebb_compaction_tokens_saved_total',
    help: 'Context tokens removed by passes, emergency truncations and microcompaction stubs (tokens before minus tokens after).',
    labelNames: ['tier'] as const,
    registers,
  });
  const microcompacted = new Counter({
    name: 'ebb_microcompacted_results_total',
    help: 'Tool results microcompaction put a stub in place of (no LLM call; the archive keeps them whole).',
    registers,
  });
  const emergencies = new Counter({
    name: 'ebb_emergency_truncations_total',
    help: 'Emergency truncations: context set aside at once, before a summary exists.',
    registers,
  });
  const reconciled = new Counter({
    name: 'ebb_compaction_reconciled_total',
    help: 'Stuck runs the reconciler settled, by action (requeued: its job was gone; failed, stale: marked with a reason).',
    labelNames: ['action'] as const,
    registers,
  });
  const breakerSkips = new Counter({
    name: 'ebb_compaction_breaker_skips_total',
    help: "Passes skipped because the channel's circuit breaker was open (its last passes failed, LLM fallbacks included); it closes by itself after a pause.",
    labelNames: ['tier'] as const,
    registers,
  });
  const fallbacks = new Counter({
    name: 'ebb_compaction_fallbacks_total',
    help: 'Passes whose summary the extractive summarizer wrote because the LLM failed for good.',
    registers,
  });

  const memoriesRejected = new Counter({
    name: 'ebb_memories_rejected_total',
    help: 'Memories the summarizer proposed that were not stored, by reason (unknown_type, empty_text, text_too_long, bad_importance, no_source, malformed).',
    labelNames: ['reason'] as const,
    registers,
  });
  const memoriesRepaired = new Counter({
    name: 'ebb_memories_repaired_total',
    help: 'Fields of proposed memories repaired before storing, by reason (speaker_unknown, speaker_spelling, seq_range, importance, text_nul).',
    labelNames: ['reason'] as const,
    registers,
  });

  // LLM, registered here so the exposition keeps its order.
  const onLlmCalls = llmMetrics(registers, prices);

  // Turns.
  const usage = new Histogram({
    name: 'ebb_context_usage',
    help: "Context usage after each turn, as a fraction of the channel's window (across channels).",
    buckets: [...USAGE_BUCKETS],
    registers,
  });
  const turns = new Counter({
    name: 'ebb_turns_total',
    help: 'Messages the bot handled, by platform and whether it answered.',
    labelNames: ['platform', 'answered'] as const,
    registers,
  });
  const turnDuration = new Histogram({
    name: 'ebb_turn_duration_seconds',
    help: 'Duration of a turn: append, reply when answered, and the compaction monitor.',
    buckets: [...TURN_DURATION_BUCKETS],
    registers,
  });

  // Deletions and edits the platforms reported.
  const onMessageChange = messageChangeMetrics(registers);
  const onRetention = retentionMetrics(registers);
  const onBudget = budgetMetrics(registers);

  // Tools.
  const onToolCall = toolMetrics(registers);
  const observeContextCache = contextCacheMetrics(registers);

  // Queue, read once per scrape: the three collectors below share one reading.
  let reading: Promise<QueueReading | undefined> | undefined;
  const readQueue = (): Promise<QueueReading | undefined> => {
    reading ??= readQueueStats(queue, statsTimeoutMs).finally(() => {
      reading = undefined;
    });
    return reading;
  };
  new Counter({
    name: 'ebb_queue_stats_errors_total',
    help: 'Scrapes whose queue stats could not be read (Redis down or slow); the queue gauges are left out then.',
    registers,
    async collect() {
      if ((await readQueue())?.failed) this.inc();
    },
  });
  new Gauge({
    name: 'ebb_queue_depth',
    help: 'Jobs by queue and state.',
    labelNames: ['queue', 'state'] as const,
    registers,
    async collect() {
      this.reset();
      const read = await readQueue();
      if (!read?.counts) return;
      for (const [state, count] of Object.entries(read.counts)) this.set({ queue: read.name, state }, count);
    },
  });
  new Gauge({
    name: 'ebb_queue_oldest_job_age_seconds',
    help: 'Age of the oldest job waiting for a worker, by queue (0 when none waits).',
    labelNames: ['queue'] as const,
    registers,
    async collect() {
      this.reset();
      const read = await readQueue();
      if (read?.ageSeconds !== undefined) this.set({ queue: read.name }, read.ageSeconds);
    },
  });

  // Every bounded label combination exists from the start, so rate() sees the first increment.
  for (const tier of TIERS) {
    for (const outcome of ['completed', 'stale', 'failed', 'skipped'] as const)
      passes.inc({ tier, outcome }, 0);
    tokensSaved.inc({ tier }, 0);
    breakerSkips.inc({ tier }, 0);
    passDuration.zero({ tier });
  }
  tokensSaved.inc({ tier: 'microcompact' }, 0);
  passes.inc({ tier: 'emergency', outcome: 'emergency' }, 0);
  for (const reason of MEMORY_REJECT_REASONS) memoriesRejected.inc({ reason }, 0);
  for (const reason of MEMORY_REPAIR_REASONS) memoriesRepaired.inc({ reason }, 0);
  for (const platform of PLATFORMS) {
    for (const answered of ['true', 'false'] as const) turns.inc({ platform, answered }, 0);
  }

  return {
    registry,
    contentType: registry.contentType,

    onCompactionEvent(event) {
      if (event.event === 'compaction.reconciled' && event.action !== undefined)
        reconciled.inc({ action: event.action });
      // Reasons come from the closed lists of `validateMemories`; anything else is no label of ours.
      for (const [reason, n] of Object.entries(event.memoriesRejected ?? {}))
        if (REJECT_REASONS.has(reason)) memoriesRejected.inc({ reason }, count(n ?? 0));
      for (const [reason, n] of Object.entries(event.memoriesRepaired ?? {}))
        if (REPAIR_REASONS.has(reason)) memoriesRepaired.inc({ reason }, count(n ?? 0));
      if (event.event === 'compaction.microcompacted') {
        microcompacted.inc(count(event.messagesCompacted ?? 0));
        if (event.tokensBefore !== undefined && event.tokensAfter !== undefined)
          tokensSaved.inc({ tier: 'microcompact' }, count(event.tokensBefore - event.tokensAfter));
        return;
      }
      const outcome = passOutcome(event.event);
      if (outcome === undefined || event.tier === 'microcompact') return;
      const { tier } = event;
      passes.inc({ tier, outcome });
      if (outcome === 'completed' && event.durationMs !== undefined)
        passDuration.observe({ tier }, seconds(event.durationMs));
      if (
        (outcome === 'completed' || outcome === 'emergency') &&
        event.tokensBefore !== undefined &&
        event.tokensAfter !== undefined
      ) {
        tokensSaved.inc({ tier }, count(event.tokensBefore - event.tokensAfter));
      }
      if (outcome === 'emergency') emergencies.inc();
      if (outcome === 'skipped' && event.reason === CIRCUIT_OPEN) breakerSkips.inc({ tier });
      if (event.fallback === true) fallbacks.inc();
    },

    onLlmCalls,

    onTurn(turn) {
      turns.inc({ platform: turn.platform, answered: String(turn.answered) });
      if (Number.isFinite(turn.usage) && turn.usage >= 0) usage.observe(turn.usage);
      turnDuration.observe(seconds(turn.durationMs));
    },

    onToolCall,

    onMessageChange,
    onRetention,
    onBudget,

    observeQueue(stats) {
      queue = stats;
    },

    observeContextCache,

    metricsText: () => registry.metrics(),
  };
}

interface QueueReading {
  readonly name: string;
  readonly counts?: Record<string, number>;
  readonly ageSeconds?: number;
  /** Some of it could not be read. */
  readonly failed: boolean;
}

/** Both stats of the queue, each bounded by the timeout; what failed is left out. */
async function readQueueStats(
  source: QueueStats | undefined,
  timeoutMs: number,
): Promise<QueueReading | undefined> {
  if (!source) return undefined;
  const [counts, age] = await Promise.allSettled([
    withTimeout(() => source.counts(), timeoutMs),
    withTimeout(() => source.oldestWaitingAgeMs(), timeoutMs),
  ]);
  return {
    name: source.name,
    ...(counts.status === 'fulfilled' ? { counts: counts.value } : {}),
    ...(age.status === 'fulfilled' ? { ageSeconds: (age.value ?? 0) / 1000 } : {}),
    failed: counts.status === 'rejected' || age.status === 'rejected',
  };
}
