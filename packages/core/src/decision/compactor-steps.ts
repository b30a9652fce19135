/**
 * The two steps the bot's compactor carries out in the turn, through the store and without a queue:
 * microcompaction (stubs for old tool results) and emergency truncation. Both are planned on the
 * context the decision saw and refused by the store when the channel moved on since (a splice, or
 * another bot's step); each reports its outcome as one compaction event.
 *
 * Token figures in the events are prompt tokens in calibrated terms (context and reserve: system
 * prompt, tools and recalled memories, times the calibration factor), the same terms as `usage`.
 */

import type { ContextView } from '../model/model.js';
import { type Calibration, usageOf } from '../model/tokens.js';
import { WorkingContext } from '../model/working-context.js';
import { stubToolResults } from '../plans/plan-microcompaction.js';
import type { ContextWriter, TruncationOutcome, TurnLog } from '../ports/ports.js';
import type { CompactionEventSink } from './compaction-events.js';
import type { CompactorSettings } from './compactor-settings.js';

export interface CompactorSteps {
  readonly channels: Pick<TurnLog, 'loadContext'> & ContextWriter;
  readonly emit: CompactionEventSink;
  /** Tokens of a truncation marker. */
  readonly markerTokens: number;
}

/**
 * The channel a decision is about and the terms it is made in: built once per call of the compactor
 * and handed to every step of it, instead of the same three positional parameters to each.
 */
export interface ChannelTerms {
  readonly channelKey: string;
  readonly settings: CompactorSettings;
  readonly calibration: Calibration;
}

/** What a usage figure is computed in: a channel's compactor settings and its calibration. */
type UsageTerms = Pick<ChannelTerms, 'settings' | 'calibration'>;

/**
 * Puts stubs in place of the old tool results `seqs` (under the store's channel lock); returns the
 * context after it, or undefined when the channel moved on meanwhile (nothing stubbed).
 */
export async function stubThroughStore(
  steps: CompactorSteps,
  terms: ChannelTerms,
  context: ContextView,
  seqs: readonly number[],
): Promise<ContextView | undefined> {
  const { channelKey, settings } = terms;
  const stubs = stubToolResults(context.raw, seqs, settings.tokenizer, settings.readHistory ?? true);
  const outcome = await steps.channels.stubToolResults(channelKey, {
    expectedGeneration: context.generation,
    stubs,
  });
  const next = new WorkingContext(context);
  next.replaceRaw(stubs);
  if (outcome.kind === 'stale' || outcome.generation !== next.generation) return undefined;
  const prompt = promptTokens(terms);
  steps.emit({
    event: 'compaction.microcompacted',
    channel: channelKey,
    tier: 'microcompact',
    usage: compactorUsage(next.view(), terms),
    fromSeq: seqs[0] ?? 0,
    toSeq: seqs.at(-1) ?? 0,
    tokensBefore: prompt(outcome.tokensBefore),
    tokensAfter: prompt(outcome.tokensAfter),
    messagesCompacted: outcome.stubbed,
  });
  return next.view();
}

/**
 * An emergency truncation through the store. When the channel moved past `expectedGeneration` (a
 * splice landed since the decision), it decides again on what is stored: no cut when that is under
 * the emergency threshold. Returns the stored context after it and whether anything was cut.
 */
export async function truncateThroughStore(
  steps: CompactorSteps,
  terms: ChannelTerms,
  usageNow: number,
  expectedGeneration: number | undefined,
): Promise<{ context?: ContextView; truncated?: boolean }> {
  const { channelKey } = terms;
  const { policy } = terms.settings;
  steps.emit({ event: 'compaction.triggered', channel: channelKey, tier: 'emergency', usage: usageNow });
  const request = {
    fraction: policy.emergencyFraction,
    protectRecent: policy.protectRecent,
    markerTokens: steps.markerTokens,
  };
  let outcome: TruncationOutcome = await steps.channels.truncate(channelKey, {
    ...request,
    ...(expectedGeneration === undefined ? {} : { expectedGeneration }),
  });
  if (outcome.kind === 'nothing' && outcome.reason === 'stale') {
    const current = await steps.channels.loadContext(channelKey);
    if (compactorUsage(current, terms) < policy.emergencyThreshold) return { context: current };
    outcome = await steps.channels.truncate(channelKey, {
      ...request,
      expectedGeneration: current.generation,
    });
    if (outcome.kind === 'nothing') return { context: current };
  }
  if (outcome.kind === 'nothing') {
    steps.emit({
      event: 'compaction.skipped',
      channel: channelKey,
      tier: 'emergency',
      usage: usageNow,
      reason: outcome.reason,
    });
    return {};
  }
  const context = await steps.channels.loadContext(channelKey);
  const prompt = promptTokens(terms);
  steps.emit({
    event: 'compaction.emergency',
    channel: channelKey,
    tier: 'emergency',
    usage: compactorUsage(context, terms),
    fromSeq: outcome.plan.fromSeq,
    toSeq: outcome.plan.toSeq,
    tokensBefore: prompt(outcome.tokensBefore),
    tokensAfter: prompt(outcome.tokensAfter),
    messagesCompacted: outcome.plan.droppedMessages,
  });
  return { context, truncated: true };
}

/** Usage of a context (or of a token count) under a channel's compactor settings (the prompt budget, calibrated). */
export function compactorUsage(
  context: Pick<ContextView, 'tokens'>,
  { settings, calibration }: UsageTerms,
): number {
  return usageOf({
    contextTokens: context.tokens,
    reservedTokens: settings.reservedTokens,
    contextWindow: settings.contextWindow,
    maxOutputTokens: settings.maxOutputTokens,
    calibration,
  });
}

function promptTokens({ settings, calibration }: UsageTerms): (contextTokens: number) => number {
  return (contextTokens) => Math.round((contextTokens + settings.reservedTokens) * calibration.factor);
}
