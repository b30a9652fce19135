/**
 * What a channel's monitor does after a turn, as a value. Emergency comes first and is never held
 * back: not by a job in flight, a cooldown, or passes that did not help. Background and aggressive
 * passes are enqueued at most one at a time per channel, no sooner than the cooldown after the last,
 * and not after `maxIneffectivePasses` passes in a row that left usage above the background threshold
 * (a loop that never shrinks anything is reported instead of repeated).
 */
import type { Tier } from './model.js';
import type { CompactionPolicy } from './policy.js';

export type SkipReason = 'in_flight' | 'cooldown' | 'ineffective';

export type TierDecision =
  | { readonly kind: 'none' }
  | { readonly kind: 'emergency' }
  | { readonly kind: 'compact'; readonly tier: 'background' | 'aggressive' }
  /** Replace the truncated spans of the prefix with a real summary. */
  | { readonly kind: 'heal' }
  | { readonly kind: 'skip'; readonly tier: Tier; readonly reason: SkipReason };

export interface TierInput {
  readonly usage: number;
  readonly policy: Pick<
    CompactionPolicy,
    | 'backgroundThreshold'
    | 'aggressiveThreshold'
    | 'emergencyThreshold'
    | 'cooldownMs'
    | 'maxIneffectivePasses'
  >;
  readonly now: number;
  readonly lastEnqueuedAt: number | undefined;
  readonly ineffectivePasses: number;
  readonly jobInFlight: boolean;
  /** The prefix holds a truncated span that a pass should replace with a summary. */
  readonly needsHeal: boolean;
}

export function decideTier(input: TierInput): TierDecision {
  const { usage, policy } = input;
  if (usage >= policy.emergencyThreshold) return { kind: 'emergency' };
  const tier =
    usage >= policy.aggressiveThreshold
      ? 'aggressive'
      : usage >= policy.backgroundThreshold
        ? 'background'
        : undefined;
  if (tier === undefined) {
    return input.needsHeal && !input.jobInFlight ? { kind: 'heal' } : { kind: 'none' };
  }
  if (input.jobInFlight) return { kind: 'skip', tier, reason: 'in_flight' };
  if (input.ineffectivePasses >= policy.maxIneffectivePasses)
    return { kind: 'skip', tier, reason: 'ineffective' };
  if (input.lastEnqueuedAt !== undefined && input.now - input.lastEnqueuedAt < policy.cooldownMs) {
    return { kind: 'skip', tier, reason: 'cooldown' };
  }
  return { kind: 'compact', tier };
}
