/**
 * What a channel's prompt holds besides the conversation, in tokens: the system message, the
 * definitions of the built-in tools it is offered, and the block a summary is wrapped in. Counted
 * by any `Tokenizer` (the channel's own, or `ByteTokenizer` for a bound that loads no encoding), and
 * nothing here loads one.
 */
import type { PromptMeasure, ResolvedChannelConfig } from '@ebb/config';
import {
  HISTORY_TOOL_SPECS,
  summarySpanBound,
  systemPromptTokens,
  type Tokenizer,
  toolSpecsTokens,
} from '@ebb/core';
// The patterns alone: the package's index loads the MCP client and the toolbox, which a config check needs only with servers.
import { isToolAllowed } from '@ebb/tools/allow-patterns';

/**
 * Tokens of the built-in tools the channel's `[tools] allow` lets it use, as every prompt of the bot
 * carries them: what a process without the bot's toolbox can count. MCP tools need their servers
 * running, so `ebb status` and `ebb simulate` leave them out (the dashboard, in the bot's process,
 * counts them).
 */
export function builtInToolTokens(
  settings: Pick<ResolvedChannelConfig, 'tools'>,
  tokenizer: Tokenizer,
): number {
  return toolSpecsTokens(
    tokenizer,
    HISTORY_TOOL_SPECS.filter((spec) => isToolAllowed(settings.tools.allow, spec.name)),
  );
}

/**
 * The channel's system prompt and built-in tools, and a summary's block, as `checkChannel` weighs
 * whether a pass has room (MCP tools are left out, as `ebb status` and `ebb simulate` leave them out).
 */
export function channelPromptMeasure(
  settings: Pick<ResolvedChannelConfig, 'bot' | 'tools'>,
  tokenizer: Tokenizer,
): PromptMeasure {
  return {
    promptHeadTokens:
      systemPromptTokens(tokenizer, settings.bot.systemPrompt) + builtInToolTokens(settings, tokenizer),
    summaryFrameTokens: summarySpanBound(tokenizer, 0),
  };
}
