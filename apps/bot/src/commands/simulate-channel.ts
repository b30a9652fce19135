/**
 * What every `ebb simulate` replay shares: a `Simulation` set up from a channel's resolved settings
 * (its reserve counted as the bot counts it), and what a replay's totals are estimated to cost at the
 * channel's `[prices]`.
 */
import type { ResolvedChannelConfig } from '@ebb/config';
import {
  type CompactionPolicy,
  costUsd,
  Simulation,
  type SimulationOptions,
  type SummaryEvent,
  systemPromptTokens,
  type Tokenizer,
} from '@ebb/core';
import { mayReadHistory } from '../status/channel-status.js';
import { builtInToolTokens } from '../status/prompt-measure.js';
import { DEFAULT_JOB_LATENCY } from './simulate-defaults.js';

export interface ChannelSimulationOptions
  extends Partial<Pick<SimulationOptions, 'jobLatency' | 'jobSeconds'>>,
    Pick<SimulationOptions, 'emit'> {
  /** The policy to replay instead of the channel's own (a candidate of `--suggest`). */
  readonly policy?: CompactionPolicy;
  /** The window to replay instead of the channel's own. */
  readonly contextWindow?: number;
}

export function channelSimulation(
  channel: ResolvedChannelConfig,
  tokenizer: Tokenizer,
  options: ChannelSimulationOptions,
): Simulation {
  // The reserve is what every prompt sends besides the conversation: the system prompt and the
  // tools. Memories are not simulated, so none are recalled (the bot reserves what a turn recalls).
  const promptHeadTokens =
    systemPromptTokens(tokenizer, channel.bot.systemPrompt) + builtInToolTokens(channel, tokenizer);
  return new Simulation({
    policy: options.policy ?? channel.compaction,
    contextWindow: options.contextWindow ?? channel.llm.contextWindow,
    maxOutputTokens: channel.llm.maxOutputTokens,
    reservedTokens: promptHeadTokens,
    promptHeadTokens,
    tokenizer,
    readHistory: mayReadHistory(channel),
    jobLatency: options.jobLatency ?? DEFAULT_JOB_LATENCY,
    ...(options.jobSeconds === undefined ? {} : { jobSeconds: options.jobSeconds }),
    // Replies after a silence longer than this find the cache cold, as they would in the channel.
    cacheTtlSeconds: channel.llm.cacheTtlSeconds,
    // No replay reads the archive back, and a pass reads a summary in place of what it covers: the
    // decisions are the same, and a million messages (`--from-archive`) replay in bounded memory.
    retainArchive: 'unsummarized',
    emit: options.emit,
  });
}

/** USD: the reply prompts as a prefix cache serves them, and the summarizer's tokens. */
export interface ReplayCost {
  readonly replies: number;
  readonly passes: number;
  readonly total: number;
}

/** What a replay's reply prompts and passes cost at `[prices]`; null when either model is unpriced. */
export function replayCost(s: SummaryEvent, channel: ResolvedChannelConfig): ReplayCost | null {
  const chat = channel.llm.price;
  const summarizer = channel.price;
  if (!chat || !summarizer) return null;
  const c = s.promptCache;
  const replies = costUsd({ input: c.promptTokens, cached: c.cachedTokens, output: 0 }, chat);
  const passes = costUsd({ input: s.summarizerInputTokens, output: s.summarizerOutputTokens }, summarizer);
  return { replies, passes, total: replies + passes };
}

/** Per 1,000 messages of the replay. */
export function perThousand(usd: number, s: Pick<SummaryEvent, 'messages'>): number {
  return (1000 * usd) / Math.max(1, s.messages);
}
