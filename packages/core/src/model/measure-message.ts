/**
 * A message entering the working context: counted once, and clipped to head + tail when it is above
 * the per-message cap. The archive keeps the whole text; only the context copy is clipped.
 */

import type { NewMessage } from '../ports/ports.js';
import type { ArchivedMessage, ContextMessage } from './model.js';
import { MESSAGE_OVERHEAD_TOKENS, messageTokens, type Tokenizer } from './tokens.js';

/** Share of the kept tokens taken from the start of a clipped message; the rest comes from its end. */
const HEAD_SHARE = 0.6;

export function clipMarker(omittedTokens: number): string {
  return `\n[… ${omittedTokens} tokens of this message left out here; the archive keeps it whole …]\n`;
}

export interface MeasuredMessage {
  /** The message as it enters the context. */
  readonly entry: ContextMessage;
  /** Tokens of the whole message, as the archive (and a summarizer reading it) sees it. */
  readonly archivedTokens: number;
}

export function measureMessage(
  message: ArchivedMessage,
  tokenizer: Tokenizer,
  maxTokens: number,
): MeasuredMessage {
  const tokens = messageTokens(tokenizer, message);
  if (tokens <= maxTokens) return { entry: { ...message, tokens }, archivedTokens: tokens };
  return { entry: clipMessage(message, tokenizer, maxTokens), archivedTokens: tokens };
}

/** A message to append, before the store gives it a seq. */
export type UnmeasuredMessage = Omit<ArchivedMessage, 'seq'> & Pick<NewMessage, 'platformMessageId'>;

/**
 * The message as a store appends it (`NewMessage`): the whole text and its tokens for the archive,
 * and the context's copy (`contextTokens`, `contextText` when clipped to `maxTokens`).
 */
export function toNewMessage(
  message: UnmeasuredMessage,
  tokenizer: Tokenizer,
  maxTokens: number,
): NewMessage {
  const { platformMessageId, ...archived } = message;
  const { entry, archivedTokens } = measureMessage({ seq: 0, ...archived }, tokenizer, maxTokens);
  const { seq: _placeholder, text: _contextText, tokens: contextTokens, ...rest } = entry;
  return {
    ...rest,
    text: message.text,
    tokens: archivedTokens,
    contextTokens,
    ...(platformMessageId === undefined ? {} : { platformMessageId }),
    ...(entry.omittedTokens === undefined ? {} : { contextText: entry.text }),
  };
}

/** The context's copy of an appended `NewMessage`, under the seq the store gave it. */
export function contextEntryOf(message: NewMessage, seq: number): ContextMessage {
  // The archive's own fields stay there: the entry is what a load of the context gives.
  const {
    platformMessageId: _id,
    recalledMemories: _recalled,
    tokens: _archived,
    contextTokens,
    contextText,
    text,
    ...rest
  } = message;
  return { ...rest, seq, text: contextText ?? text, tokens: contextTokens };
}

function clipMessage(message: ArchivedMessage, tokenizer: Tokenizer, maxTokens: number): ContextMessage {
  // Only an oversized message is encoded (the common case is one count).
  const encoded = tokenizer.encode(message.text);
  const prefixTokens = messageTokens(tokenizer, { ...message, text: '' }) - MESSAGE_OVERHEAD_TOKENS;
  // Room for the kept text: the cap less the overhead, the speaker prefix, tool calls and the marker.
  const markerTokens = tokenizer.count(clipMarker(encoded.length));
  let keep = Math.max(0, maxTokens - MESSAGE_OVERHEAD_TOKENS - prefixTokens - markerTokens);
  // Token boundaries can merge across the cut, so shrink until the clipped text fits.
  for (;;) {
    const head = Math.floor(keep * HEAD_SHARE);
    const tail = keep - head;
    const omitted = encoded.length - keep;
    const text =
      tokenizer.decode(encoded.slice(0, head)) +
      clipMarker(omitted) +
      tokenizer.decode(tail > 0 ? encoded.slice(encoded.length - tail) : []);
    const tokens = messageTokens(tokenizer, { ...message, text });
    if (tokens <= maxTokens || keep === 0) return { ...message, text, tokens, omittedTokens: omitted };
    keep = Math.max(0, keep - (tokens - maxTokens));
  }
}
