/**
 * The message and context model. Every message a channel ever sees is archived with a seq number
 * (1, 2, 3, … per channel) and is never deleted. What the model sees is the working context: a
 * compacted prefix of spans that tile seqs 1..k, then the raw messages k+1..head.
 */

export type Role = 'user' | 'assistant' | 'tool';

/** A tool call made by an assistant message; its result arrives as a later `tool` message. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** A message as the archive keeps it: whole, forever. */
export interface ArchivedMessage {
  readonly seq: number;
  readonly role: Role;
  readonly author: string;
  readonly text: string;
  readonly ts?: string;
  /** Assistant messages that call tools. */
  readonly toolCalls?: readonly ToolCall[];
  /** Tool results: the id of the call they answer. */
  readonly toolCallId?: string;
}

/** Archived messages as the archive holds them: whole, with their full token counts. */
export interface StoredMessage extends ArchivedMessage {
  readonly tokens: number;
  /**
   * Microcompaction stubbed this tool result: the stub the context holds in its place, and its
   * tokens. A pass summarizes the stub, not the whole result (see `summarizedMessage`).
   */
  readonly stub?: { readonly text: string; readonly tokens: number };
}

/**
 * A message as it sits in the working context. Its text is the archived text, or head + tail with a
 * marker when the message is above the per-message cap. `tokens` is counted once, when the message
 * enters the context, and includes the per-message chat overhead.
 */
export interface ContextMessage extends ArchivedMessage {
  readonly tokens: number;
  /** Set when the text was clipped: how many tokens of the original were left out. */
  readonly omittedTokens?: number;
  /**
   * Set when microcompaction put a stub in place of this tool result (`plan-microcompaction.ts`):
   * `text` is the stub, `tokens` its count; the archive keeps the result whole.
   */
  readonly stubbed?: true;
}

export type Tier = 'background' | 'aggressive' | 'emergency';

/** Seqs fromSeq..toSeq of one channel. */
export interface SeqRange {
  readonly fromSeq: number;
  readonly toSeq: number;
}

/** Summarized messages fromSeq..toSeq. */
export interface SummarySpan {
  readonly kind: 'summary';
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
  readonly tokens: number;
  /** Generation of the channel after the splice that created this span. */
  readonly createdGeneration: number;
  /** The compaction job whose result this is; a second application of the same job is a no-op. */
  readonly jobId: string;
}

/** Messages fromSeq..toSeq set aside by an emergency truncation; a later pass heals it with a summary. */
export interface TruncatedSpan {
  readonly kind: 'truncated';
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Tokens of the marker the model sees in place of the messages. */
  readonly tokens: number;
  readonly createdGeneration: number;
}

export type Span = SummarySpan | TruncatedSpan;

/** A read-only view of one channel's working context. */
export interface ContextView {
  readonly generation: number;
  /** Seq of the newest archived message (0 when empty). */
  readonly headSeq: number;
  readonly spans: readonly Span[];
  /** Raw messages after the last span, oldest first. */
  readonly raw: readonly ContextMessage[];
  /** Tokens of spans and raw messages (without system prompt and recalled memories). */
  readonly tokens: number;
  /**
   * The seqs of the raw tool results, oldest first, when the holder keeps them (`WorkingContext`
   * does): microcompaction's per-turn check then reads those instead of scanning the raw messages.
   */
  readonly toolResultSeqs?: readonly number[];
}

/** A channel's compacted prefix without its raw messages. */
export type PrefixView = Pick<ContextView, 'generation' | 'headSeq' | 'spans'>;

/** Seq of the last message covered by spans (0 when there are none). */
export function prefixEnd(spans: readonly Span[]): number {
  return spans.at(-1)?.toSeq ?? 0;
}
