/** The models the pipeline is written against: the summarizer and the chat model, and the calls they record. */

import type { NewMemory } from '../memory/memory.js';
import type { StoredMessage, ToolCall } from '../model/model.js';
import type { ChatMessage } from '../rendering/render-context.js';
import type { ToolSpec } from './tool-ports.js';

/** One call to a model, recorded per pass (and later per reply) for runs, logs and metrics. */
export interface LlmCall {
  readonly purpose: 'summary' | 'merge' | 'reply';
  readonly model: string;
  readonly inputTokens: number;
  /** The part of `inputTokens` the provider served from its prompt cache. */
  readonly cachedInputTokens?: number;
  readonly outputTokens: number;
  readonly durationMs: number;
  /** Tries it took (1 when the first succeeded). */
  readonly attempts: number;
  /** The mapped error code of the last failed try, when the call failed for good. */
  readonly error?: string;
  /** The error code of every failed try, retried or not, oldest first (429s and 5xx a retry hid included). */
  readonly failedTries?: readonly string[];
}

export interface SummarizeInput {
  readonly channelKey: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Texts of the summary spans folded into this one, oldest first. */
  readonly earlierSummaries: readonly string[];
  /** The archived messages of the range not covered by those summaries, whole, oldest first. */
  readonly messages: readonly StoredMessage[];
  /** Bound on the summary text, in tokens. */
  readonly maxTokens: number;
  /** What the summary should dwell on (`/compact focus`). */
  readonly focus?: string;
  /**
   * The channel can wait for a better summary: when the provider fails in a way that can pass (a
   * rate limit, an outage), give up (`SummarizerGaveUpError`) so the job is retried later, instead
   * of writing the extractive fallback now. False (the default) when the pass must land: a higher
   * tier, or the job's last attempt.
   */
  readonly canWait?: boolean;
  /**
   * Called before every model request the pass sends (first tries, retries, merges): throws
   * (`TakenBackError`) when a take-back since the snapshot covers the range, so no request built
   * from the old text is sent after it. The summarizer lets that error through, with no fallback.
   */
  readonly beforeCall?: () => Promise<void>;
}

/** A memory as extracted from a range, before the pipeline gives it scope and channel. */
export type ExtractedMemory = Omit<NewMemory, 'scope' | 'channelKey'>;

/**
 * A memory as a summarizer proposes it: the model's words and numbers, of the right JSON types but
 * otherwise unchecked. `validateMemories` decides what of it may be stored.
 */
export interface ProposedMemory {
  readonly type: string;
  readonly text: string;
  readonly importance: number;
  readonly speaker?: string | null;
  readonly fromSeq: number;
  readonly toSeq: number;
}

export interface SummaryOutput {
  readonly text: string;
  /** Proposals; the compaction processor checkpoints and stores only those `validateMemories` keeps. */
  readonly memories: readonly ProposedMemory[];
  /** True when the LLM failed for good and the extractive summarizer wrote this. */
  readonly fallback: boolean;
  readonly model: string;
  readonly calls: readonly LlmCall[];
  /**
   * The channel's take-back mark when the pass read its snapshot (the processor stamps it on the
   * checkpoint): a retry that reuses the checkpoint is checked against take-backs since then. A
   * checkpoint without it (an older version's) counts as read at mark 0.
   */
  readonly takeBackMark?: number;
}

/** Writes the summary of a range and extracts its memories (an LLM; or the extractive summarizer offline). */
export interface Summarizer {
  summarize(input: SummarizeInput, signal?: AbortSignal): Promise<SummaryOutput>;
}

/** The model that answers in channels. */
export interface ChatModel {
  /** `label` names it in logs and startup lines (`gpt-4o-mini`, `offline responder`). */
  readonly label: string;
  reply(messages: readonly ChatMessage[], options?: ChatReplyOptions): Promise<ChatReply>;
}

/**
 * What `[llm] token_limit_param` may say: the name of the output cap, or `auto` (today's
 * `max_completion_tokens`, switching to `max_tokens` for a server that refuses it).
 */
export const TOKEN_LIMIT_PARAMS = ['auto', 'max_completion_tokens', 'max_tokens'] as const;
export type TokenLimitParam = (typeof TOKEN_LIMIT_PARAMS)[number];
/** `[llm] reasoning_effort`, passed through to reasoning models. */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];
/** `[llm] prompt_cache_retention`: how long OpenAI keeps a cached prefix. */
export const CACHE_RETENTIONS = ['in_memory', '24h'] as const;
export type CacheRetention = (typeof CACHE_RETENTIONS)[number];

/** The `[llm]` settings a model request is shaped by (beyond model, messages and output cap). */
export interface RequestSettings {
  readonly tokenLimitParam: TokenLimitParam;
  /** Name a `prompt_cache_key` per channel (dropped when the server refuses it). */
  readonly promptCacheKey: boolean;
  readonly promptCacheRetention?: CacheRetention;
  readonly temperature?: number;
  readonly reasoningEffort?: ReasoningEffort;
}

export interface ChatReplyOptions {
  readonly signal?: AbortSignal;
  /** The channel the reply is for: a provider's prompt cache routes its prompts together. */
  readonly channelKey?: string;
  /** Tools the model may call in this reply (none: it answers in words). */
  readonly tools?: readonly ToolSpec[];
}

export interface ChatReply {
  /** The answer; may be empty when the model calls tools instead. */
  readonly text: string;
  /** The tools the model wants called, in order, named as in `ToolSpec.name`; absent or empty: none. */
  readonly toolCalls?: readonly ToolCall[];
  /** The provider's count of the prompt (for calibration); absent offline. */
  readonly promptTokens?: number;
  /** The part of `promptTokens` the provider served from its prompt cache. */
  readonly cachedPromptTokens?: number;
  readonly completionTokens?: number;
  /** The error code of every try that failed before this reply (429s and 5xx a retry hid). */
  readonly failedTries?: readonly string[];
  /** The model the provider says answered (often a dated snapshot of the one asked for); absent offline. */
  readonly responseModel?: string;
  /** Why the model stopped, as the provider says it (`stop`, `tool_calls`, …); absent offline. */
  readonly finishReason?: string;
}
