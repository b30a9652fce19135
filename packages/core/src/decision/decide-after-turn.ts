/**
 * The one after-turn decision. The bot (`ChannelCompactor`) and `ebb simulate` (`Simulation`) both
 * call it with a channel's state and only carry out its answer, so the simulator predicts what the
 * bot does. Pure: no clock, no I/O.
 *
 * The rules, in order:
 *
 * 0. **Microcompaction.** Usage at or above `microcompact_threshold` and old tool results to stub
 *    (`planMicrocompaction`): stub them now, in the turn, then decide again on the smaller context.
 *    It comes before every other rule because it loses nothing and needs no LLM: a context that
 *    stubs its way under a threshold never needs the pass (or the truncation) that threshold starts.
 * 1. **Emergency.** Usage at or above `emergency_threshold`: truncate now, in the turn. Nothing holds
 *    it back: not a pass in flight, not the cooldown, not passes that did not help.
 * 2. **Is a pass due?** Yes when usage is at or above `background_threshold`, or when the channel's
 *    pace says a pass started now would land at or above it
 *    (`projected = usage + growth per second × pass seconds`), that growth is at least half the room
 *    between the background and emergency thresholds, and usage is at least the early-start floor
 *    (`background − 2 × (emergency − background)`, 0.50 with the defaults). Under a
 *    burst a pass thus starts early enough to land by the background threshold, leaving the whole room
 *    up to the emergency threshold for the pace to be misjudged; at human pace the growth term is a
 *    rounding error and passes start at the background threshold as configured. An early start
 *    yields to rule 0, not yet reached: no pass starts early while the stubs microcompaction will
 *    make at its threshold would keep the projection under the background threshold
 *    (`stubsComeFirst`), so a burst of tool results is stubbed for free, not summarized by an LLM.
 * 3. **How big?** A pass frees `aggressive_fraction` of the context (labelled `aggressive`) when
 *    usage or the projection is at or above `aggressive_threshold`; else `background_fraction`
 *    (`working_fraction` when a working size sets the threshold), and an aggressive pass never less.
 *    Under a working size, at least what brings usage back to where a background pass from the
 *    working size lands (`backToWorkingSize`), so a channel that outgrew it is not left at its edge. It
 *    covers that share plus the summary that replaces it (`planCompaction`), so it frees what it
 *    aims at, and a range that cannot hold more than a summary is never planned (`nothing_to_free`):
 *    a pass never makes the context bigger.
 * 4. **With nothing in flight:** a pass from seq 1 (folding earlier summaries). A background-sized
 *    pass within `cooldown_seconds` of the last background or aggressive pass *landing* is enqueued
 *    delayed until the cooldown ends (not dropped: a channel that goes quiet still gets it). The
 *    cooldown never delays a pass the pace starts early, an aggressive pass, a follow-up, a heal or
 *    an emergency, nor (under a working size) one whose channel has grown since that landing by
 *    what the pass frees.
 * 5. **With a pass waiting (not started) of a lower tier:** escalate: replace it with one planned now.
 * 6. **With a head pass running** (one that starts at the front of the context, so it folds the
 *    earlier summaries): queue a follow-up over the next disjoint range (it may run at the same time
 *    and splices after the head) when the projection, less what the passes in flight will free, is
 *    still at or above `aggressive_threshold`; at most `MAX_PASSES_IN_FLIGHT` per channel. Never a
 *    follow-up of a follow-up: the next pass starts at the front again and folds both summaries, so
 *    summaries never pile up in the prefix. Otherwise the pass in flight is enough: skip (`in_flight`).
 * 7. After `max_ineffective_passes` passes in a row that freed little, stop queueing (`ineffective`),
 *    but for a heal (rule 8): a channel that passes cannot help still gets its truncations healed.
 * 8. A truncated span in the prefix and nothing in flight, when no pass is due (or rule 7 holds passes
 *    back): heal it with a summary that also takes the oldest raw messages, so it frees tokens
 *    (`planHeal`). When those are not enough yet, the channel's next messages will be: every
 *    truncation is healed, by a heal or by the next pass, which starts at the front and covers it.
 */

import type { CompactionPolicy } from '../model/compaction-policy.js';
import type { ContextView, Tier } from '../model/model.js';
import {
  type CompactionPlan,
  type NothingReason,
  planCompaction,
  planHeal,
  tokensInRange,
} from '../plans/plan-compaction.js';
import {
  type MicrocompactPolicy,
  planMicrocompaction,
  STUB_TOKENS_BOUND,
} from '../plans/plan-microcompaction.js';
import type { PassInFlight } from '../ports/queue-ports.js';

/** Passes of one channel waiting or running at once: a head pass and one follow-up. */
export const MAX_PASSES_IN_FLIGHT = 2;

/** How fast the channel fills and how long its passes take (see `CompactionMonitor`). */
export interface ChannelPace {
  /** Usage added per second, a moving average. */
  readonly growthPerSecond: number;
  /** Seconds from enqueue to splice, a moving average. */
  readonly passSeconds: number;
}

export type AfterTurnPolicy = Pick<
  CompactionPolicy,
  | 'backgroundThreshold'
  | 'aggressiveThreshold'
  | 'emergencyThreshold'
  | 'backgroundFraction'
  | 'aggressiveFraction'
  | 'protectRecent'
  | 'cooldownMs'
  | 'maxIneffectivePasses'
  | 'workingTokens'
> &
  MicrocompactPolicy;

export interface AfterTurnInput {
  readonly context: ContextView;
  readonly usage: number;
  /** Usage of one context token (calibration factor / (window − reply reserve)). */
  readonly usagePerToken: number;
  /** Tokens of the largest summary span a pass writes (`summarySpanBound`). */
  readonly summaryTokens: number;
  readonly policy: AfterTurnPolicy;
  readonly now: number;
  /** The channel's passes waiting or running, oldest range first. */
  readonly inFlight: readonly PassInFlight[];
  readonly pace: ChannelPace;
  /** When the last background or aggressive pass landed (heals do not start a cooldown). */
  readonly lastLandedAt: number | undefined;
  /** Usage right after the last landing the monitor judged: how much the channel has grown since. */
  readonly usageAfterLanding?: number;
  readonly ineffectivePasses: number;
}

export type EnqueueMode = 'new' | 'escalate' | 'follow_up' | 'heal';

export type SkipReason = 'in_flight' | 'ineffective' | NothingReason;

export type AfterTurnAction =
  | { readonly kind: 'none' }
  /** Stub these raw tool results (seqs, oldest first), then decide again. */
  | { readonly kind: 'microcompact'; readonly seqs: readonly number[] }
  | { readonly kind: 'emergency' }
  | {
      readonly kind: 'enqueue';
      readonly mode: EnqueueMode;
      readonly plan: CompactionPlan;
      /** Wait this long before running (the cooldown); 0 for at once. */
      readonly delayMs: number;
      /** The pass whose range ends right before this one's (a follow-up or an escalated follow-up). */
      readonly after?: string;
      readonly projectedUsage: number;
    }
  | {
      readonly kind: 'skip';
      readonly tier: Tier;
      readonly reason: SkipReason;
      readonly projectedUsage: number;
    };

/** Usage when a pass started now would land, at the channel's current pace. */
export function projectedUsage(usage: number, pace: ChannelPace): number {
  return usage + pace.growthPerSecond * pace.passSeconds;
}

/** The lowest usage at which a pass may start early because of the channel's pace. */
export function earlyStartFloor(policy: AfterTurnPolicy): number {
  return policy.backgroundThreshold - 2 * (policy.emergencyThreshold - policy.backgroundThreshold);
}

/**
 * Whether a background or aggressive pass is due (rule 2). Callers skip asking the queue when it is
 * not and nothing needs healing: the per-turn check stays free of I/O.
 */
export function passDue(usage: number, projected: number, policy: AfterTurnPolicy): boolean {
  if (usage >= policy.backgroundThreshold) return true;
  // An early start only for a material pace: one pass's growth at least half the room up to emergency.
  const room = policy.emergencyThreshold - policy.backgroundThreshold;
  return (
    usage >= earlyStartFloor(policy) &&
    projected >= policy.backgroundThreshold &&
    projected - usage >= room / 2
  );
}

export function decideAfterTurn(input: AfterTurnInput): AfterTurnAction {
  const { usage, policy, context, inFlight } = input;
  const stubs = planMicrocompaction(context, usage, policy);
  if (stubs.length > 0) return { kind: 'microcompact', seqs: stubs };
  if (usage >= policy.emergencyThreshold) return { kind: 'emergency' };
  const projected = projectedUsage(usage, input.pace);

  const heal = (): AfterTurnAction | undefined => {
    const plan =
      inFlight.length === 0
        ? planHeal(context, { protectRecent: policy.protectRecent, summaryTokens: input.summaryTokens })
        : undefined;
    return plan && { kind: 'enqueue', mode: 'heal', plan, delayMs: 0, projectedUsage: projected };
  };
  if (!passDue(usage, projected, policy) || stubsComeFirst(input, projected))
    return heal() ?? { kind: 'none' };

  const tier: Tier =
    usage >= policy.aggressiveThreshold || projected >= policy.aggressiveThreshold
      ? 'aggressive'
      : 'background';
  const skip = (reason: SkipReason): AfterTurnAction => ({
    kind: 'skip',
    tier,
    reason,
    projectedUsage: projected,
  });
  if (input.ineffectivePasses >= policy.maxIneffectivePasses) return heal() ?? skip('ineffective');

  const fraction = passFraction(input, tier);
  const plan = (mode: EnqueueMode, previous: PassInFlight | undefined, delayMs: number): AfterTurnAction => {
    const result = planCompaction({
      context,
      tier,
      fraction,
      protectRecent: policy.protectRecent,
      summaryTokens: input.summaryTokens,
      ...(previous ? { after: previous.toSeq } : {}),
    });
    if (result.kind === 'nothing') return skip(result.reason);
    return {
      kind: 'enqueue',
      mode,
      plan: result.plan,
      delayMs,
      ...(previous ? { after: previous.jobId } : {}),
      projectedUsage: projected,
    };
  };

  const last = inFlight.at(-1);
  if (last === undefined) return plan('new', undefined, cooldownDelay(input, tier));
  if (!last.running && tierRank(tier) > tierRank(last.tier)) return plan('escalate', inFlight.at(-2), 0);
  if (inFlight.length < MAX_PASSES_IN_FLIGHT && isHead(inFlight[0], context)) {
    const afterInFlight = projected - freedBy(inFlight, input);
    if (afterInFlight >= policy.aggressiveThreshold) return plan('follow_up', last, 0);
  }
  return skip('in_flight');
}

/**
 * Rule 2's yield to rule 0: a pass due only by the pace (usage under the background threshold) waits
 * while the tool results microcompaction will stub once usage reaches its threshold (each freeing
 * its tokens less a stub's, at most `STUB_TOKENS_BOUND`) would keep the projection under the
 * background threshold. Should the stubs not be enough when they come, the decision after them
 * starts the pass.
 */
function stubsComeFirst(input: AfterTurnInput, projected: number): boolean {
  const { usage, policy, context, usagePerToken } = input;
  const stubsFrom = Math.min(policy.microcompactThreshold, policy.backgroundThreshold);
  const seqs = planMicrocompaction(context, Math.max(usage, stubsFrom), policy);
  if (seqs.length === 0) return false;
  const first = context.raw[0]?.seq ?? 0;
  const freed = seqs.reduce(
    (n, seq) => n + Math.max(0, (context.raw[seq - first]?.tokens ?? 0) - STUB_TOKENS_BOUND),
    0,
  );
  return projected - freed * usagePerToken < policy.backgroundThreshold;
}

/**
 * The share of the context a pass of `tier` frees (rule 3): its tier's fraction, and an aggressive
 * pass at least what a background one does (under a working size the background tier's
 * `working_fraction` can be the larger), and at least what brings the channel back under its
 * working size (`backToWorkingSize`).
 */
export function passFraction(
  input: Pick<AfterTurnInput, 'policy' | 'usage' | 'usagePerToken' | 'context'>,
  tier: Tier,
): number {
  const { policy } = input;
  return Math.max(
    tier === 'aggressive' ? policy.aggressiveFraction : 0,
    policy.backgroundFraction,
    backToWorkingSize(input),
  );
}

/** The most of the context one pass is planned to free (the rest is its summary's and the protected messages'). */
const MAX_PASS_FRACTION = 0.9;

/**
 * Under a working size, the share of the context a pass must free to land where a background pass
 * lands from the working size itself, `(1 − background_fraction) × background threshold`: a channel
 * that outgrew it while passes ran (a burst, a replay) is brought back under it in one pass, rather
 * than landing at the threshold and coming due again at once. 0 when the usual fraction is enough,
 * or without a working size.
 */
function backToWorkingSize(
  input: Pick<AfterTurnInput, 'policy' | 'usage' | 'usagePerToken' | 'context'>,
): number {
  const { policy, usage, usagePerToken, context } = input;
  if (policy.workingTokens === undefined || context.tokens <= 0 || usagePerToken <= 0) return 0;
  const reserve = usage - context.tokens * usagePerToken;
  const target = (1 - policy.backgroundFraction) * policy.backgroundThreshold;
  const tokensAfter = Math.max(0, (target - reserve) / usagePerToken);
  return Math.min(MAX_PASS_FRACTION, Math.max(0, 1 - tokensAfter / context.tokens));
}

/** Higher means more urgent. */
export function tierRank(tier: Tier): number {
  switch (tier) {
    case 'background':
      return 0;
    case 'aggressive':
      return 1;
    case 'emergency':
      return 2;
  }
}

/** Whether a pass starts at the front of the context (so it folds every earlier summary). */
function isHead(pass: PassInFlight | undefined, context: ContextView): boolean {
  const front = context.spans[0]?.fromSeq ?? context.raw[0]?.seq ?? 1;
  return pass !== undefined && pass.fromSeq <= front;
}

/**
 * Rule 4: a background-sized pass waits out the cooldown since the last pass landed, unless a
 * working size sets the background threshold and the channel has grown since that landing by what
 * this pass frees: then its own messages made it due, and it is no loop of small passes (a flood, or
 * a replay, against a working size far below the aggressive threshold: between them there is room
 * for many passes' worth of growth, and a cooldown would let it all in). At the window's edge the
 * aggressive threshold is close above, and a waiting pass escalates to it instead.
 */
function cooldownDelay(input: AfterTurnInput, tier: Tier): number {
  const early = input.usage < input.policy.backgroundThreshold;
  if (tier !== 'background' || early || input.lastLandedAt === undefined) return 0;
  const { workingTokens, backgroundFraction } = input.policy;
  const grown = input.usageAfterLanding !== undefined && input.usage - input.usageAfterLanding;
  if (workingTokens !== undefined && grown !== false && grown >= backgroundFraction * input.usage) return 0;
  return Math.max(0, input.lastLandedAt + input.policy.cooldownMs - input.now);
}

/**
 * Usage the passes in flight will free when they land: what their ranges hold now, less a summary
 * each (at most `summaryTokens`; a pass over less than that frees nothing).
 */
function freedBy(passes: readonly PassInFlight[], input: AfterTurnInput): number {
  let tokens = 0;
  for (const pass of passes) {
    const covered = tokensInRange(input.context, pass.fromSeq, pass.toSeq);
    tokens += Math.max(0, covered - input.summaryTokens);
  }
  return tokens * input.usagePerToken;
}
