/**
 * One channel's working context in memory, with its token total kept incrementally: appending a
 * message and reading usage are O(1) in the channel's history. Plans are computed from `view()`
 * and applied here; a plan made at another generation is refused, so a caller that lost a race must
 * plan again.
 */

import { InvariantError } from '../support/errors.js';
import { type ChannelCounters, countersAfterSplice, countersAfterTruncation } from './channel-counters.js';
import type { SplicePlan, TruncationPlan } from './context-writes.js';
import type { ContextMessage, ContextView, Span, SummarySpan } from './model.js';
import { prefixEnd } from './model.js';

export interface ApplyOutcome {
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly messagesRemoved: number;
}

export class WorkingContext {
  #generation: number;
  #headSeq: number;
  #spans: Span[];
  #raw: ContextMessage[];
  #spanTokens: number;
  #rawTokens: number;
  /** Seqs of the raw tool results, oldest first (see `ContextView.toolResultSeqs`). */
  #toolSeqs: number[];

  constructor(initial?: Partial<Pick<ContextView, 'generation' | 'headSeq' | 'spans' | 'raw'>>) {
    this.#generation = initial?.generation ?? 0;
    this.#spans = [...(initial?.spans ?? [])];
    this.#raw = [...(initial?.raw ?? [])];
    this.#headSeq = initial?.headSeq ?? this.#raw.at(-1)?.seq ?? prefixEnd(this.#spans);
    this.#spanTokens = sumTokens(this.#spans);
    this.#rawTokens = sumTokens(this.#raw);
    this.#toolSeqs = toolSeqsOf(this.#raw);
  }

  get generation(): number {
    return this.#generation;
  }

  get headSeq(): number {
    return this.#headSeq;
  }

  /** Tokens of spans and raw messages. */
  get tokens(): number {
    return this.#spanTokens + this.#rawTokens;
  }

  /** A read-only view; valid until the next change. */
  view(): ContextView {
    return {
      generation: this.#generation,
      headSeq: this.#headSeq,
      spans: this.#spans,
      raw: this.#raw,
      tokens: this.tokens,
      toolResultSeqs: this.#toolSeqs,
    };
  }

  append(message: ContextMessage): void {
    if (message.seq !== this.#headSeq + 1) {
      throw new InvariantError(`append of seq ${message.seq} after head ${this.#headSeq}`);
    }
    this.#raw.push(message);
    this.#rawTokens += message.tokens;
    if (message.role === 'tool') this.#toolSeqs.push(message.seq);
    this.#headSeq = message.seq;
  }

  applySplice(plan: Extract<SplicePlan, { kind: 'splice' }>): ApplyOutcome {
    this.#checkGeneration(plan.generation);
    const tokensBefore = this.tokens;
    const dropped = this.#dropRawThrough(plan.dropRawThrough);
    this.#spans = [...plan.spans];
    this.#take(countersAfterSplice(this.#counters(), plan, dropped.tokens));
    return { tokensBefore, tokensAfter: this.tokens, messagesRemoved: dropped.messages };
  }

  applyTruncation(plan: TruncationPlan): ApplyOutcome {
    this.#checkGeneration(plan.generation);
    const tokensBefore = this.tokens;
    const counters = this.#counters();
    const dropped = this.#dropRawThrough(plan.toSeq);
    const replaced = plan.extendsLast ? this.#spans.pop() : undefined;
    this.#spans.push({
      kind: 'truncated',
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      tokens: plan.markerTokens,
      createdGeneration: this.#generation + 1,
    });
    // What this context dropped (the plan counted the same messages, at its generation).
    const done = { ...plan, droppedTokens: dropped.tokens };
    this.#take(countersAfterTruncation(counters, done, replaced?.tokens ?? 0));
    return { tokensBefore, tokensAfter: this.tokens, messagesRemoved: dropped.messages };
  }

  /**
   * Puts a new text in place of the active summary span over exactly `span`'s range (forgetting);
   * the generation goes up. Returns the span it replaced, or undefined when no summary span has that
   * range (nothing changes).
   */
  replaceSummary(span: Omit<SummarySpan, 'createdGeneration'>): SummarySpan | undefined {
    const i = this.#spans.findIndex(
      (s) => s.kind === 'summary' && s.fromSeq === span.fromSeq && s.toSeq === span.toSeq,
    );
    const old = this.#spans[i];
    if (old?.kind !== 'summary') return undefined;
    this.#generation++;
    this.#spans[i] = { ...span, createdGeneration: this.#generation };
    this.#spanTokens += span.tokens - old.tokens;
    return old;
  }

  /**
   * Replaces raw messages by seq (forgetting with `--archive`), keeping the token total; seqs that
   * are not raw are left alone. The generation goes up when any was replaced. Returns how many were.
   */
  replaceRaw(messages: readonly ContextMessage[]): number {
    const bySeq = new Map(messages.map((m) => [m.seq, m]));
    let replaced = 0;
    this.#raw = this.#raw.map((m) => {
      const next = bySeq.get(m.seq);
      if (!next) return m;
      this.#rawTokens += next.tokens - m.tokens;
      replaced++;
      return next;
    });
    if (replaced > 0) {
      this.#generation++;
      this.#toolSeqs = toolSeqsOf(this.#raw);
    }
    return replaced;
  }

  /** The counters the write planners take (`channel-counters.ts`). */
  #counters(): ChannelCounters {
    return {
      generation: this.#generation,
      headSeq: this.#headSeq,
      prefixEnd: prefixEnd(this.#spans),
      spanTokens: this.#spanTokens,
      rawTokens: this.#rawTokens,
    };
  }

  /** Takes the counters a planner returned (head and prefix follow from the spans and raw messages). */
  #take(after: ChannelCounters): void {
    this.#generation = after.generation;
    this.#spanTokens = after.spanTokens;
    this.#rawTokens = after.rawTokens;
  }

  /** Drops the raw messages through `seq` (the token total is the caller's to move): how many, and their tokens. */
  #dropRawThrough(seq: number): { messages: number; tokens: number } {
    let n = 0;
    let tokens = 0;
    while (n < this.#raw.length && (this.#raw[n]?.seq ?? Number.POSITIVE_INFINITY) <= seq) {
      tokens += this.#raw[n]?.tokens ?? 0;
      n++;
    }
    if (n > 0) this.#raw.splice(0, n);
    let tools = 0;
    while (tools < this.#toolSeqs.length && (this.#toolSeqs[tools] ?? Number.POSITIVE_INFINITY) <= seq)
      tools++;
    if (tools > 0) this.#toolSeqs.splice(0, tools);
    return { messages: n, tokens };
  }

  #checkGeneration(generation: number): void {
    if (generation !== this.#generation) {
      throw new InvariantError(`plan made at generation ${generation}, context is at ${this.#generation}`);
    }
  }
}

function sumTokens(items: readonly { readonly tokens: number }[]): number {
  let sum = 0;
  for (const item of items) sum += item.tokens;
  return sum;
}

function toolSeqsOf(raw: readonly ContextMessage[]): number[] {
  const seqs: number[] = [];
  for (const m of raw) if (m.role === 'tool') seqs.push(m.seq);
  return seqs;
}
