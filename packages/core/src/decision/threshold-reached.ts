/**
 * The highest threshold a channel's usage has reached: what `ebb status` and the dashboard show
 * beside the usage (the dashboard's page too, for the rows a turn event moves, so the two agree).
 * It names where usage stands, not what happens next: that is `decideAfterTurn`'s (cooldowns,
 * passes in flight, microcompaction).
 */
import type { Tier } from '../model/model.js';

/** A channel's three thresholds, as shares of its prompt budget. */
export interface TierThresholds {
  readonly background: number;
  readonly aggressive: number;
  readonly emergency: number;
}

export type ThresholdReached = 'none' | Tier;

export function thresholdReached(usage: number, thresholds: TierThresholds): ThresholdReached {
  if (usage >= thresholds.emergency) return 'emergency';
  if (usage >= thresholds.aggressive) return 'aggressive';
  if (usage >= thresholds.background) return 'background';
  return 'none';
}
