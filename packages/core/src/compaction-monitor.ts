/**
 * The bookkeeping a channel's monitor carries between turns: when it last enqueued a pass, how many
 * passes in a row did not bring usage under the background threshold, and which skip it last
 * reported (so a channel waiting on a job logs the wait once, not every turn). No I/O: the bot and
 * `ebb simulate` both drive it.
 */
import { decideTier, type SkipReason, type TierDecision } from './decide-tier.js';
import type { CompactionPolicy } from './policy.js';

export interface MonitorInput {
  readonly usage: number;
  readonly now: number;
  readonly jobInFlight: boolean;
  readonly needsHeal: boolean;
}

export interface MonitorDecision {
  readonly decision: TierDecision;
  /** False for a skip already reported with the same reason. */
  readonly report: boolean;
}

export class CompactionMonitor {
  #lastEnqueuedAt: number | undefined;
  #ineffectivePasses = 0;
  #lastSkip: SkipReason | undefined;

  get ineffectivePasses(): number {
    return this.#ineffectivePasses;
  }

  decide(policy: CompactionPolicy, input: MonitorInput): MonitorDecision {
    if (input.usage < policy.backgroundThreshold) this.#ineffectivePasses = 0;
    const decision = decideTier({
      ...input,
      policy,
      lastEnqueuedAt: this.#lastEnqueuedAt,
      ineffectivePasses: this.#ineffectivePasses,
    });
    if (decision.kind !== 'skip') {
      this.#lastSkip = undefined;
      return { decision, report: true };
    }
    const report = decision.reason !== this.#lastSkip;
    this.#lastSkip = decision.reason;
    return { decision, report };
  }

  /** A pass was enqueued at `now`. */
  enqueued(now: number): void {
    this.#lastEnqueuedAt = now;
  }

  /**
   * A pass finished and was spliced; `usage` is measured right after. Returns whether it was
   * effective (brought usage under the background threshold); ineffective passes are counted.
   */
  passCompleted(policy: CompactionPolicy, usage: number): boolean {
    const effective = usage < policy.backgroundThreshold;
    this.#ineffectivePasses = effective ? 0 : this.#ineffectivePasses + 1;
    return effective;
  }
}
