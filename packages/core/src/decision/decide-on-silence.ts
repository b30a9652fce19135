/**
 * The decision when a channel's cache has gone cold: it has not been prompted for longer than its
 * cache lifetime (`cache_ttl_seconds`, counted from its last reply), so the provider has let its
 * prompt go and the next reply pays the whole prompt anyway. A pass then costs the cache nothing:
 * the break it makes after the system prompt falls on a prompt that is uncached already. Done now,
 * off the turn path, it also makes that full-price prompt smaller. Under a burst a channel never
 * goes cold, so nothing changes there. The bot (`ChannelCompactor.onSilence`) and `ebb simulate`
 * both ask this. Pure: no clock, no I/O.
 *
 * The rules, in order:
 *
 * 1. A pass waiting or running: it will land; nothing more (the cooldown's delayed pass included).
 * 2. Passes that did not help stopped the queueing (`max_ineffective_passes`): nothing.
 * 3. Usage under `SILENCE_PASS_SHARE` of the background threshold: not due soon enough to be worth
 *    a pass; the channel waits for its turn.
 * 4. Otherwise the pass `decideAfterTurn` would plan at the threshold: `background_fraction`
 *    (`working_fraction` under a working size), at least what brings the channel back under its
 *    working size, `aggressive_fraction` at or above the aggressive threshold; never a pass that
 *    cannot free more than its summary.
 */
import type { ContextView, Tier } from '../model/model.js';
import { type CompactionPlan, planCompaction } from '../plans/plan-compaction.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import { type AfterTurnPolicy, passFraction } from './decide-after-turn.js';

/**
 * The share of the background threshold from which a cold channel is compacted. A pass from the
 * threshold frees `working_fraction` (0.7), so a channel cycles between about 0.3 and 1 of it; at
 * 0.75 it has grown most of a cycle (0.45 of 0.7), and compacting it early adds about a third of a
 * pass to that cycle's summarizer cost while saving its next pass's cache break.
 */
export const SILENCE_PASS_SHARE = 0.75;

export interface SilenceInput {
  readonly context: ContextView;
  readonly usage: number;
  /** Usage of one context token (calibration factor / (window − reply reserve)). */
  readonly usagePerToken: number;
  /** Tokens of the largest summary span a pass writes (`summarySpanBound`). */
  readonly summaryTokens: number;
  readonly policy: AfterTurnPolicy;
  readonly inFlight: readonly PassInFlight[];
  readonly ineffectivePasses: number;
}

export type SilenceAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'enqueue'; readonly plan: CompactionPlan };

export function decideOnSilence(input: SilenceInput): SilenceAction {
  const { policy, usage, context } = input;
  if (input.inFlight.length > 0) return { kind: 'none' };
  if (input.ineffectivePasses >= policy.maxIneffectivePasses) return { kind: 'none' };
  if (usage < SILENCE_PASS_SHARE * policy.backgroundThreshold) return { kind: 'none' };
  const tier: Tier = usage >= policy.aggressiveThreshold ? 'aggressive' : 'background';
  const result = planCompaction({
    context,
    tier,
    fraction: passFraction(input, tier),
    protectRecent: policy.protectRecent,
    summaryTokens: input.summaryTokens,
  });
  return result.kind === 'nothing' ? { kind: 'none' } : { kind: 'enqueue', plan: result.plan };
}
