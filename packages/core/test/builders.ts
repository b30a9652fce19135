/** Small builders for core tests: messages with given token counts, no tokenizer needed. */
import type { ContextMessage, Span } from '../src/model/model.js';

export function msg(seq: number, tokens: number, fields: Partial<ContextMessage> = {}): ContextMessage {
  return { seq, role: 'user', author: `u${seq % 3}`, text: `message ${seq}`, tokens, ...fields };
}

export function toolCall(seq: number, tokens: number, ids: readonly string[]): ContextMessage {
  return msg(seq, tokens, {
    role: 'assistant',
    author: 'ebb',
    toolCalls: ids.map((id) => ({ id, name: 'lookup', arguments: '{}' })),
  });
}

export function toolResult(seq: number, tokens: number, id: string): ContextMessage {
  return msg(seq, tokens, { role: 'tool', author: 'lookup', toolCallId: id });
}

export function summary(
  fromSeq: number,
  toSeq: number,
  tokens: number,
  createdGeneration = 1,
  jobId = `j${fromSeq}-${toSeq}`,
): Span {
  return {
    kind: 'summary',
    fromSeq,
    toSeq,
    text: `summary ${fromSeq}..${toSeq}`,
    tokens,
    createdGeneration,
    jobId,
  };
}

export function truncated(fromSeq: number, toSeq: number, tokens = 10, createdGeneration = 1): Span {
  return { kind: 'truncated', fromSeq, toSeq, tokens, createdGeneration };
}

/** Messages seq from..to with `tokens` each. */
export function run(from: number, to: number, tokens = 10): ContextMessage[] {
  const out: ContextMessage[] = [];
  for (let seq = from; seq <= to; seq++) out.push(msg(seq, tokens));
  return out;
}
