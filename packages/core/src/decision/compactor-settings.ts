/** What the compactor decides and acts on for one channel: its policy, tokenizer and window. */

import type { CompactionPolicy } from '../model/compaction-policy.js';
import type { Calibration, Tokenizer } from '../model/tokens.js';

export interface CompactorSettings {
  readonly policy: CompactionPolicy;
  /** The channel's tokenizer: microcompaction counts the stubs it writes. */
  readonly tokenizer: Tokenizer;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  /**
   * Tokens every prompt spends besides the context: the system prompt, the definitions of the tools
   * the channel is offered and the memories its turn recalled (what the turn really sends, not the
   * recall budget: a reserve no turn uses would leave passes nothing to free).
   */
  readonly reservedTokens: number;
  /** The channel may call read_history, so microcompaction's stubs say how to read a result back (default: yes). */
  readonly readHistory?: boolean;
}

/**
 * The settings a channel decides with, given how its provider counts. Usage is Ebb's count
 * corrected by the provider's reports (`calibration`), which is right for the window: the provider
 * is what refuses a prompt too long. A working size is a bound the operator chose, so it is reached
 * when either count reaches it: a report can raise Ebb's count (framing it cannot see) but not
 * lower it. A gateway or fake that leaves the tools or the framing out of `usage` would otherwise
 * grow every channel past its working size (the peers' fake reports 0.63 of Ebb's count, and the
 * context grew to 1.6 times the working size: BENCHMARKS.md, "Side by side with the peers").
 */
export function settingsFor(settings: CompactorSettings, calibration: Calibration): CompactorSettings {
  const { policy } = settings;
  if (policy.workingTokens === undefined || calibration.factor >= 1) return settings;
  return {
    ...settings,
    policy: { ...policy, backgroundThreshold: policy.backgroundThreshold * calibration.factor },
  };
}
