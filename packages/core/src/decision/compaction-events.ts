/**
 * The compaction log contract: one structured event per step of a pass, emitted by the bot's
 * compactor and by the worker, logged as one JSON line each (`event` field) by the composition
 * roots. Fields are numbers, ids and codes only: never message text.
 */

import type { MemoryRejectReason, MemoryRepairReason } from '../memory/validate-memories.js';
import type { Tier } from '../model/model.js';

export const COMPACTION_EVENTS = [
  'compaction.triggered',
  'compaction.enqueued',
  'compaction.skipped',
  'compaction.started',
  'compaction.completed',
  'compaction.failed',
  'compaction.stale',
  'compaction.restarted',
  'compaction.emergency',
  'compaction.microcompacted',
  'compaction.reconciled',
  'compaction.memories_invalid',
] as const;

export type CompactionEventName = (typeof COMPACTION_EVENTS)[number];

/** The tiers events report: a pass's or truncation's, or `microcompact` for stubbed tool results. */
export type EventTier = Tier | 'microcompact';

export interface CompactionLogEvent {
  readonly event: CompactionEventName;
  readonly channel: string;
  readonly tier: EventTier;
  readonly usage?: number;
  /** Usage when a pass started now would land, at the channel's pace (see `decideAfterTurn`). */
  readonly projectedUsage?: number;
  /** A pass enqueued to run later (the cooldown). */
  readonly delayMs?: number;
  readonly fromSeq?: number;
  readonly toSeq?: number;
  readonly tokensBefore?: number;
  readonly tokensAfter?: number;
  readonly summaryTokens?: number;
  readonly messagesCompacted?: number;
  readonly memoriesAdded?: number;
  readonly durationMs?: number;
  readonly jobId?: string;
  /**
   * The extractive summary wrote a pass's summary because its model failed (`error` says why). An
   * offline pass, which has no model to fail, is `fallback: false` with model `extractive`.
   */
  readonly fallback?: boolean;
  /**
   * The model that wrote a pass's summary (`compaction.completed`: `extractive` for an extractive
   * summary, offline or as the fallback), or that a failed pass called (`compaction.failed`).
   */
  readonly model?: string;
  /** The pass's model calls, summed (`compaction.completed`; `compaction.failed` when it called one). */
  readonly inputTokens?: number;
  /** The part of `inputTokens` the provider served from its prompt cache. */
  readonly cachedInputTokens?: number;
  readonly outputTokens?: number;
  /** What those calls cost in USD at `[prices]`; null when a model called has no price. */
  readonly costUsd?: number | null;
  /**
   * Why a pass was skipped or went stale, or what failed (an error code, not a stack); on
   * `compaction.triggered`, `cache_cold` for a pass started by a silence (`decideOnSilence`).
   */
  readonly reason?: string;
  readonly error?: string;
  /** What the reconciler did with a stuck run (`compaction.reconciled`). */
  readonly action?: ReconcileActionKind;
  /** Memories of a pass left out by `validateMemories`, by reason (`compaction.memories_invalid`). */
  readonly memoriesRejected?: Partial<Record<MemoryRejectReason, number>>;
  /** Fields of a pass's memories `validateMemories` repaired, by reason. */
  readonly memoriesRepaired?: Partial<Record<MemoryRepairReason, number>>;
}

export type ReconcileActionKind = 'requeued' | 'failed' | 'stale';

export type CompactionEventSink = (event: CompactionLogEvent) => void;
