/**
 * Whether a channel's window leaves a pass something to free. Usage counts the whole prompt, but a
 * pass can only shrink the conversation: the system prompt, the tools and the recalled memories (the
 * reserve) stay, and so do the `protect_recent` newest messages and the summary the pass writes. At
 * the background threshold the conversation holds
 * `background_threshold × (context_window − max_output_tokens) − reserve` tokens; a background pass
 * must be able to free at least half of `background_fraction` of them (what `CompactionMonitor`
 * counts as a pass that helped) besides its summary and the protected messages. When it cannot,
 * every pass frees too little, usage stays above the threshold, truncations cannot be healed without
 * growing the context, and the channel lives on emergency truncations: `ebb config check` refuses
 * such a configuration (`@ebb/config`'s cross-field rules).
 *
 * Pure: the callers count the reserve and the summary's block with the channel's tokenizer, or pass
 * 0 where they cannot (then the check refuses only what no prompt could make work).
 */

/**
 * What the check counts each protected message as, not knowing the channel's traffic: a short chat
 * message (in the #ubuntu IRC transcript the median message is 17 tokens, the 90th percentile 30).
 */
export const SHORT_MESSAGE_TOKENS = 32;

export interface PassRoomInput {
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  /** Tokens every prompt sends besides the conversation, at most: system prompt, tools, memories. */
  readonly reservedTokens: number;
  readonly backgroundThreshold: number;
  readonly backgroundFraction: number;
  /** Tokens of the largest summary span a pass writes (`summarySpanBound`). */
  readonly summaryTokens: number;
  readonly protectRecent: number;
}

export interface PassRoom {
  /** Conversation tokens at the background threshold, the reserve set aside. */
  readonly conversationTokens: number;
  /** Tokens the protected messages are counted as (`protectRecent × SHORT_MESSAGE_TOKENS`). */
  readonly protectedTokens: number;
  /**
   * The conversation a background pass needs to free half its fraction besides the summary and the
   * protected messages: `(summary + protected) / (1 − fraction / 2)`.
   */
  readonly neededTokens: number;
  readonly fits: boolean;
}

export function passRoom(input: PassRoomInput): PassRoom {
  const budget = input.contextWindow - input.maxOutputTokens;
  // (The epsilon: a threshold that is a working size over the budget gives that size back whole.)
  const conversationTokens = Math.floor(input.backgroundThreshold * budget + 1e-6) - input.reservedTokens;
  const protectedTokens = input.protectRecent * SHORT_MESSAGE_TOKENS;
  const neededTokens = Math.ceil(
    (input.summaryTokens + protectedTokens) / (1 - input.backgroundFraction / 2),
  );
  return { conversationTokens, protectedTokens, neededTokens, fits: conversationTokens >= neededTokens };
}
