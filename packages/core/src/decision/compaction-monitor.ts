/**
 * What a channel's monitor carries between turns, around the pure `decideAfterTurn`: the channel's
 * pace (how fast usage grows, how long its slowest recent pass took from enqueue to splice), when its last pass
 * landed (for the cooldown), how many passes in a row freed little, and which skip it last reported
 * (so a channel waiting on a pass logs the wait once, not every turn). No I/O and no clock of its
 * own: the bot and `ebb simulate` both drive it with their time.
 */

import type { CompactionPolicy } from '../model/compaction-policy.js';
import type { ContextView, Tier } from '../model/model.js';
import { planMicrocompaction } from '../plans/plan-microcompaction.js';
import type { PassInFlight } from '../ports/queue-ports.js';
import {
  type AfterTurnAction,
  type AfterTurnPolicy,
  type ChannelPace,
  decideAfterTurn,
  passDue,
  projectedUsage,
  type SkipReason,
} from './decide-after-turn.js';

/** Assumed seconds from enqueue to splice until a pass of the channel has landed. */
export const DEFAULT_PASS_SECONDS = 10;
/**
 * Turns the growth rate is measured over: the usage added by the last this-many turns, over the time
 * from the oldest of them to now. Counted in turns, not seconds, so it reads a burst within a
 * second and a quiet channel's one big paste as what it is, a small share of a long span; measured
 * to now, so it fades when the channel goes quiet.
 */
export const GROWTH_WINDOW_TURNS = 64;
/** The shortest span a rate is taken over (many turns can share one timestamp). */
const MIN_GROWTH_SPAN_MS = 1_000;
/**
 * Passes whose durations the projection looks at: it uses the slowest of them, since a pass that
 * lands later than expected costs an emergency, and one that lands sooner only an earlier pass.
 */
export const PASS_SECONDS_WINDOW = 5;

export interface MonitorTurn {
  readonly context: ContextView;
  /** Usage of the context (calibrated). */
  readonly usage: number;
  /** Usage of one context token (calibration factor / (window − reply reserve)). */
  readonly usagePerToken: number;
  /** Tokens of the largest summary span a pass writes (`summarySpanBound`). */
  readonly summaryTokens: number;
  readonly now: number;
}

export interface MonitorDecision {
  readonly action: AfterTurnAction;
  /** False for a skip already reported with the same reason. */
  readonly report: boolean;
}

export interface LandedPass {
  readonly tier: Tier;
  /** Enqueue to splice. */
  readonly latencyMs: number;
  /** When it spliced. */
  readonly at: number;
}

export class CompactionMonitor {
  /** Usage added since the monitor started, and when, for the last `GROWTH_WINDOW_TURNS` turns (a ring). */
  readonly #samples: { at: number; added: number }[] = [];
  #next = 0;
  #added = 0;
  #lastUsage = 0;
  #lastGeneration: number | undefined;
  /** Enqueue-to-splice seconds of the last `PASS_SECONDS_WINDOW` passes, oldest first. */
  readonly #passSeconds: number[] = [];
  #lastLandedAt: number | undefined;
  /** Usage right after the last landing that was judged (`shrunk`). */
  #usageAfterLanding: number | undefined;
  #ineffectivePasses = 0;
  /** Usage when passes that did not help stopped the queueing (`ineffective`). */
  #stoppedAt: number | undefined;
  #lastSkip: SkipReason | 'queue_unavailable' | undefined;

  get ineffectivePasses(): number {
    return this.#ineffectivePasses;
  }

  /** The channel's pace at `now`. */
  pace(now: number): ChannelPace {
    const oldest = this.#samples.length < GROWTH_WINDOW_TURNS ? this.#samples[0] : this.#samples[this.#next];
    const span = oldest === undefined ? 0 : Math.max(MIN_GROWTH_SPAN_MS, now - oldest.at);
    return {
      growthPerSecond: oldest === undefined ? 0 : ((this.#added - oldest.added) * 1000) / span,
      passSeconds: this.#passSeconds.length === 0 ? DEFAULT_PASS_SECONDS : Math.max(...this.#passSeconds),
    };
  }

  /**
   * Records the usage of a turn for the growth average. Growth is counted between two turns of one
   * generation only: a splice or truncation in between replaced the context, so its drop is no sample.
   */
  observe(turn: MonitorTurn): void {
    const { now, usage } = turn;
    const generation = turn.context.generation;
    this.#added += generation === this.#lastGeneration ? Math.max(0, usage - this.#lastUsage) : 0;
    this.#samples[this.#next] = { at: now, added: this.#added };
    this.#next = (this.#next + 1) % GROWTH_WINDOW_TURNS;
    this.#lastUsage = usage;
    this.#lastGeneration = generation;
  }

  /**
   * Whether the decision for this turn can depend on the passes in flight. When it cannot, callers
   * decide with an empty list and never ask the queue, so a quiet channel's turn does no I/O.
   */
  needsQueue(policy: AfterTurnPolicy, turn: MonitorTurn): boolean {
    // Microcompaction comes first and needs no queue; the decision after it asks again.
    if (planMicrocompaction(turn.context, turn.usage, policy).length > 0) return false;
    if (turn.usage >= policy.emergencyThreshold) return true;
    if (turn.context.spans.some((s) => s.kind === 'truncated')) return true;
    return passDue(turn.usage, projectedUsage(turn.usage, this.pace(turn.now)), policy);
  }

  decide(
    policy: AfterTurnPolicy,
    turn: MonitorTurn & { readonly inFlight: readonly PassInFlight[] },
  ): MonitorDecision {
    // Passes that did not help are tried again once usage is under the background threshold, or has
    // grown by `background_fraction` since they stopped: by then the channel holds new messages a
    // pass can take (a small working size can sit below the protected messages after a paste, and a
    // channel held back until it drops under it would live on emergency truncations).
    const grown =
      this.#stoppedAt !== undefined && turn.usage >= this.#stoppedAt * (1 + policy.backgroundFraction);
    if (turn.usage < policy.backgroundThreshold || grown) this.#ineffectivePasses = 0;
    if (this.#ineffectivePasses === 0) this.#stoppedAt = undefined;
    const action = decideAfterTurn({
      ...turn,
      policy,
      pace: this.pace(turn.now),
      lastLandedAt: this.#lastLandedAt,
      ...(this.#usageAfterLanding === undefined ? {} : { usageAfterLanding: this.#usageAfterLanding }),
      ineffectivePasses: this.#ineffectivePasses,
    });
    if (action.kind === 'skip' && action.reason === 'ineffective') this.#stoppedAt ??= turn.usage;
    if (action.kind !== 'skip') {
      this.#lastSkip = undefined;
      return { action, report: true };
    }
    if (
      (action.reason === 'all_protected' ||
        action.reason === 'empty' ||
        action.reason === 'nothing_to_free') &&
      turn.inFlight.length === 0
    ) {
      // A pass was due and nothing can be freed: counted as a pass that landed and did not help,
      // so a channel that cannot shrink stops trying (and waits out the cooldown before it retries).
      this.#ineffectivePasses++;
      this.#lastLandedAt = turn.now;
    }
    return { action, report: this.reportOnce(action.reason) };
  }

  /** Whether a skip for `reason` is news (not the skip reported last); remembers it. */
  reportOnce(reason: SkipReason | 'queue_unavailable'): boolean {
    const report = reason !== this.#lastSkip;
    this.#lastSkip = reason;
    return report;
  }

  /** A pass of the channel spliced: its duration feeds the pace, and (but for a heal) starts the cooldown. */
  landed(pass: LandedPass): void {
    this.#passSeconds.push(Math.max(0, pass.latencyMs) / 1000);
    if (this.#passSeconds.length > PASS_SECONDS_WINDOW) this.#passSeconds.shift();
    if (pass.tier !== 'emergency') this.#lastLandedAt = Math.max(pass.at, this.#lastLandedAt ?? pass.at);
  }

  /**
   * The context after one or more passes landed, against the same context before (the splices the
   * only difference: the bot takes both from the store's figures at each splice, the simulation from
   * the turn the passes landed in): returns whether they helped. Helping means usage is now under
   * the background threshold, or they freed at least half of what a background pass aims at: its
   * fraction of the conversation, not of the reserve (`reservedUsage`, the system prompt, tools and
   * recalled memories, which no pass can free); under a burst usage can stay high although a pass
   * freed plenty. Passes that did not help are counted; past `max_ineffective_passes` the channel
   * stops queueing until usage drops under the background threshold or grows by
   * `background_fraction` (relative) from where it stopped.
   */
  shrunk(
    policy: Pick<CompactionPolicy, 'backgroundThreshold' | 'backgroundFraction'>,
    usageBefore: number,
    usageAfter: number,
    reservedUsage: number,
  ): boolean {
    const conversation = Math.max(0, usageBefore - reservedUsage);
    const effective =
      usageAfter < policy.backgroundThreshold ||
      usageBefore - usageAfter >= 0.5 * policy.backgroundFraction * conversation;
    this.#ineffectivePasses = effective ? 0 : this.#ineffectivePasses + 1;
    this.#usageAfterLanding = usageAfter;
    return effective;
  }
}
