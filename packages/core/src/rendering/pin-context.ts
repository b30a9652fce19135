/**
 * A turn's prompt is pinned to its own message: the raw messages up to that message's seq, and the
 * tool steps the turn itself archived after it. A message archived later (another replica's turn
 * that ran beside this one, with Redis away; or, for a redelivery answered late, everything after
 * the message) is its own turn's business: rendered here it would sit after the message being
 * answered, and the system prompt tells the model to answer the latest message.
 *
 * The spans are never pinned: a span covers messages before the raw ones, so it ends before the
 * turn's message (a span past it would have summarized the message itself, and the turn answers
 * from what the channel holds). The pinned view's tokens are the context's less the messages left
 * out, so what is counted against the prompt is what is sent.
 */
import type { ContextView } from '../model/model.js';

export interface PromptPin {
  /** The seq of the message the turn answers. */
  readonly seq: number;
  /** The seqs the turn archived after it: its tool calls and their results. */
  readonly steps: ReadonlySet<number>;
}

export function pinContext(view: ContextView, pin: PromptPin): ContextView {
  const later = view.raw.filter((m) => m.seq > pin.seq && !pin.steps.has(m.seq));
  if (later.length === 0) return view;
  const kept = view.raw.filter((m) => m.seq <= pin.seq || pin.steps.has(m.seq));
  const left = later.reduce((sum, m) => sum + m.tokens, 0);
  const { toolResultSeqs, ...rest } = view;
  return {
    ...rest,
    raw: kept,
    tokens: view.tokens - left,
    ...(toolResultSeqs === undefined
      ? {}
      : { toolResultSeqs: toolResultSeqs.filter((seq) => seq <= pin.seq || pin.steps.has(seq)) }),
  };
}
