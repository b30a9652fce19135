/**
 * Token accounting. Each message is counted once, with the model's real tokenizer, when it enters
 * the context; totals are kept incrementally so the per-turn check never walks the history.
 */

import type { ToolSpec } from '../ports/tool-ports.js';
import { quotedLabel } from '../support/untrusted-text.js';
import type { ArchivedMessage } from './model.js';

/** A model's tokenizer (implemented with gpt-tokenizer in `@ebb/llm`). */
export interface Tokenizer {
  readonly encoding: string;
  count(text: string): number;
  encode(text: string): number[];
  decode(tokens: readonly number[]): string;
}

/**
 * A tokenizer of UTF-8 bytes, one token each: it counts at least as many tokens as any byte-level
 * BPE (o200k_base, cl100k_base: every one of their tokens is one byte or more), without loading an
 * encoding. For a check that holds when the text takes more tokens, so holds for the real count
 * when it holds for this one (`ebb config check`'s pass room).
 */
export class ByteTokenizer implements Tokenizer {
  readonly encoding = 'utf-8 bytes';

  count(text: string): number {
    let bytes = 0;
    for (let i = 0; i < text.length; i++) {
      const unit = text.charCodeAt(i);
      if (unit < 0x80) bytes += 1;
      else if (unit < 0x800) bytes += 2;
      else if (unit >= 0xd800 && unit < 0xdc00 && isLowSurrogate(text.charCodeAt(i + 1))) {
        // A surrogate pair is one code point of four bytes (a lone surrogate is encoded as three).
        bytes += 4;
        i++;
      } else bytes += 3;
    }
    return bytes;
  }

  encode(text: string): number[] {
    return [...new TextEncoder().encode(text)];
  }

  decode(tokens: readonly number[]): string {
    return new TextDecoder().decode(Uint8Array.from(tokens));
  }
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit < 0xe000;
}

/**
 * What one chat message costs beyond its content in OpenAI's chat format: the role and separator
 * tokens (3) and the name field (1).
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * The content a message contributes to a prompt: team chat has many speakers, so users are named,
 * each by one line of at most `MAX_LABEL_CHARS` (an author cannot forge a header or a block).
 */
export function messageContent(message: Pick<ArchivedMessage, 'role' | 'author' | 'text'>): string {
  return message.role === 'user' ? `${quotedLabel(message.author)}: ${message.text}` : message.text;
}

/** Tokens of one chat message whose content is `content`. */
export function chatMessageTokens(tokenizer: Tokenizer, content: string): number {
  return tokenizer.count(content) + MESSAGE_OVERHEAD_TOKENS;
}

/**
 * Tokens the tool definitions offered with a prompt take (sent as JSON beside the messages; the
 * provider's own framing of them is left to calibration). 0 when none are offered.
 */
export function toolSpecsTokens(tokenizer: Tokenizer, specs: readonly ToolSpec[]): number {
  return specs.length === 0 ? 0 : tokenizer.count(JSON.stringify(specs));
}

/** Tokens of an archived message as a chat message: content, tool calls and overhead. */
export function messageTokens(
  tokenizer: Tokenizer,
  message: Pick<ArchivedMessage, 'role' | 'author' | 'text' | 'toolCalls'>,
): number {
  let tokens = chatMessageTokens(tokenizer, messageContent(message));
  for (const call of message.toolCalls ?? []) {
    tokens += tokenizer.count(call.name) + tokenizer.count(call.arguments) + MESSAGE_OVERHEAD_TOKENS;
  }
  return tokens;
}

/** The share of the prompt budget in use. */
export interface UsageInput {
  /** Tokens of spans and raw messages. */
  readonly contextTokens: number;
  /** Tokens the prompt spends on the system prompt and recalled memories. */
  readonly reservedTokens: number;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  readonly calibration: Calibration;
}

export function usageOf(input: UsageInput): number {
  const budget = input.contextWindow - input.maxOutputTokens;
  return ((input.contextTokens + input.reservedTokens) * input.calibration.factor) / budget;
}

/**
 * How far our count is from the provider's. `factor` multiplies our estimate; it moves toward the
 * ratio reported/estimated with each reply, so a tokenizer mismatch (another model family, hidden
 * formatting) is corrected within a few turns.
 */
export interface Calibration {
  readonly factor: number;
  readonly samples: number;
}

export const UNCALIBRATED: Calibration = Object.freeze({ factor: 1, samples: 0 });

const CALIBRATION_WEIGHT = 0.2;
const CALIBRATION_MIN = 0.5;
const CALIBRATION_MAX = 2;

/** Folds in one provider report: `estimated` is our count of the prompt, `reported` its `usage.prompt_tokens`. */
export function calibrate(current: Calibration, estimated: number, reported: number): Calibration {
  if (!(estimated > 0) || !(reported > 0)) return current;
  const ratio = Math.min(CALIBRATION_MAX, Math.max(CALIBRATION_MIN, reported / estimated));
  // The first reports are averaged; after that an exponential moving average follows drift.
  const weight = Math.max(CALIBRATION_WEIGHT, 1 / (current.samples + 1));
  return { factor: current.factor + (ratio - current.factor) * weight, samples: current.samples + 1 };
}

/** The first tokens of `text`, at most `maxTokens` of them by the tokenizer's final count. */
export function clipToTokens(text: string, tokenizer: Tokenizer, maxTokens: number): string {
  if (tokenizer.count(text) <= maxTokens) return text;
  const encoded = tokenizer.encode(text);
  let keep = Math.max(0, maxTokens);
  // Token boundaries can merge when decoded text is counted again, so shrink until it fits.
  for (;;) {
    const clipped = tokenizer.decode(encoded.slice(0, keep));
    const over = tokenizer.count(clipped) - maxTokens;
    if (over <= 0 || keep === 0) return clipped;
    keep = Math.max(0, keep - over);
  }
}
