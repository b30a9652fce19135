/**
 * Rewriting archived messages in place, as pure plans both channel stores carry out: an edit on a
 * platform (`PlatformChanges.editMessage`), forgetting's tombstones (`redactArchive`) and, through
 * `rewriteRawCopies`, microcompaction's stubs (`planStubs`).
 *
 * The archive takes the new text. A message raw in the context (after the compacted prefix) gets a
 * new context copy too: the raw token total moves by the difference between the copies, and the
 * generation goes up so bots reload. A message inside the prefix changes in the archive only (a
 * summary or a truncation marker stands for it there), and leaves the generation alone. A seq the
 * archive does not hold changes nothing.
 */

import { type ChannelCounters, contextTotal } from '../model/channel-counters.js';
import type { ContextMessage, StoredMessage } from '../model/model.js';
import type { TakeBack } from './take-back.js';

/**
 * A raw message's context copy as a write leaves it (in Postgres the `context_content`,
 * `context_tokens`, `omitted_tokens` and `stubbed` columns).
 */
export interface ContextCopy {
  /** The copy's own text when it is not the archive's: a clipped copy, or a stub. */
  readonly text?: string;
  readonly tokens: number;
  /** A clipped copy: tokens of the archived text it leaves out. */
  readonly omittedTokens?: number;
  /** A stub in place of a tool result (microcompaction). */
  readonly stubbed?: true;
}

/** A new context copy for the raw message `seq`. */
export interface RawCopy {
  readonly seq: number;
  readonly copy: ContextCopy;
}

/**
 * A message a write names, as the store found it: its seq, and its context copy's tokens. The
 * tokens are read only for a raw message (one inside the prefix has no copy in the context).
 */
export interface FoundMessage {
  readonly seq: number;
  readonly tokens: number;
}

/** The raw copies a write replaces, and the channel's numbers after it. */
export interface RawRewrite {
  /** The raw copies to write: only messages the store found, after the prefix; one per seq, in seq order. */
  readonly copies: readonly RawCopy[];
  /** Bumped when a raw copy changed. */
  readonly generation: number;
  readonly rawTokens: number;
  /** The context's tokens (spans and raw) before and after. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/**
 * The copies among `given` that replace raw ones (found, after the prefix; the last given wins for
 * a seq named twice), and the totals they leave.
 */
export function rewriteRawCopies(
  channel: ChannelCounters,
  found: readonly FoundMessage[],
  given: readonly RawCopy[],
): RawRewrite {
  const current = new Map(found.map((m) => [m.seq, m]));
  const bySeq = new Map<number, RawCopy>();
  for (const c of given) if (c.seq > channel.prefixEnd && current.has(c.seq)) bySeq.set(c.seq, c);
  const copies = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  let rawTokens = channel.rawTokens;
  for (const { seq, copy } of copies) rawTokens += copy.tokens - (current.get(seq)?.tokens ?? 0);
  return {
    copies,
    generation: copies.length > 0 ? channel.generation + 1 : channel.generation,
    rawTokens,
    tokensBefore: contextTotal(channel),
    tokensAfter: contextTotal({ ...channel, rawTokens }),
  };
}

/** A message's context copy, given the archived message it copies (the archive's fields, a new text or not). */
export function contextCopyOf(archived: StoredMessage, copy: ContextCopy): ContextMessage {
  const { tokens: _whole, stub: _stub, text, ...fields } = archived;
  return {
    ...fields,
    text: copy.text ?? text,
    tokens: copy.tokens,
    ...(copy.omittedTokens === undefined ? {} : { omittedTokens: copy.omittedTokens }),
    ...(copy.stubbed ? { stubbed: true } : {}),
  };
}

/**
 * A message's new text as its context copy (the fields of the port's `MessageEdit`, which adds the
 * archive's whole text and tokens, that an edit's copy needs).
 */
export interface EditedCopy {
  readonly seq: number;
  /** The context's copy: its tokens, and its clipped text when clipped. */
  readonly contextTokens: number;
  readonly contextText?: string;
  readonly omittedTokens?: number;
}

/**
 * The context copy of a message measured as an append or an edit measures it (`NewMessage`,
 * `EditedCopy`): the clipped text and its left-out tokens when clipped, never a stub.
 */
export function measuredCopy(measured: Omit<EditedCopy, 'seq'>): ContextCopy {
  return {
    ...(measured.contextText === undefined ? {} : { text: measured.contextText }),
    tokens: measured.contextTokens,
    ...(measured.omittedTokens === undefined ? {} : { omittedTokens: measured.omittedTokens }),
  };
}

export type MessageEditPlan =
  | ({
      readonly kind: 'edit';
      /** The edited message's context copy (a clipped copy when the new text is oversized, never a stub). */
      readonly copy: ContextCopy;
      /** The message is raw: its copy in the context is replaced. */
      readonly raw: boolean;
    } & Omit<RawRewrite, 'copies'>)
  /** The archive holds no such seq. */
  | { readonly kind: 'missing' };

/**
 * An edit of the message `found` (undefined: the archive holds no such seq) in a channel found with
 * these counters (undefined: no such channel).
 */
export function planMessageEdit(
  channel: ChannelCounters | undefined,
  found: FoundMessage | undefined,
  edit: EditedCopy,
): MessageEditPlan {
  if (channel === undefined || found === undefined || found.seq !== edit.seq) return { kind: 'missing' };
  const copy = measuredCopy(edit);
  const { copies, ...after } = rewriteRawCopies(channel, [found], [{ seq: edit.seq, copy }]);
  return { kind: 'edit', copy, raw: copies.length > 0, ...after };
}

/** What a store answers for an edit it applied (`Forgetting.editMessage`), the same from both stores. */
export interface MessageEdited {
  readonly kind: 'edited';
  /** The message was raw in the context: its copy was replaced in place. */
  readonly raw: boolean;
  readonly generation: number;
  /** Context tokens (spans and raw) before and after. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The take-back recorded with it, when the edit asked for one. */
  readonly takeBack?: TakeBack;
}

/** The answer for the edit `plan` planned, once its store applied it and recorded `takeBack`. */
export function messageEdited(
  plan: Extract<MessageEditPlan, { kind: 'edit' }>,
  takeBack: TakeBack | undefined,
): MessageEdited {
  const { raw, generation, tokensBefore, tokensAfter } = plan;
  return {
    kind: 'edited',
    raw,
    generation,
    tokensBefore,
    tokensAfter,
    ...(takeBack === undefined ? {} : { takeBack }),
  };
}

/** A tombstone to write, and the message's context copy with it. */
export interface TombstoneWrite {
  readonly tombstone: StoredMessage;
  /**
   * The tombstone itself: no clipped copy, no stub (either would quote what is forgotten). Written
   * also where the message is inside the prefix, if the store keeps copies there.
   */
  readonly copy: ContextCopy;
}

export interface ArchiveRedactionPlan extends RawRewrite {
  /** One per seq the archive holds (the last given wins), in seq order; `copies` are those raw. */
  readonly tombstones: readonly TombstoneWrite[];
}

/**
 * Tombstones over the messages `found` (those of the tombstones' seqs the archive holds) in a
 * channel found with these counters (undefined: no such channel, nothing changes).
 */
export function planArchiveRedaction(
  channel: ChannelCounters | undefined,
  found: readonly FoundMessage[],
  tombstones: readonly StoredMessage[],
): ArchiveRedactionPlan {
  if (channel === undefined) {
    return { tombstones: [], copies: [], generation: 0, rawTokens: 0, tokensBefore: 0, tokensAfter: 0 };
  }
  const held = new Set(found.map((m) => m.seq));
  const bySeq = new Map<number, StoredMessage>();
  for (const t of tombstones) if (held.has(t.seq)) bySeq.set(t.seq, t);
  const writes = [...bySeq.values()]
    .sort((a, b) => a.seq - b.seq)
    .map((tombstone) => ({ tombstone, copy: { tokens: tombstone.tokens } }));
  const copies = writes.map(({ tombstone, copy }) => ({ seq: tombstone.seq, copy }));
  return { tombstones: writes, ...rewriteRawCopies(channel, found, copies) };
}
