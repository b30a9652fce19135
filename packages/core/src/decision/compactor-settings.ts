/** What the compactor decides and acts on for one channel: its policy, tokenizer and window. */

import type { Tokenizer } from '../model/tokens.js';
import type { CompactionPolicy } from './policy.js';

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
