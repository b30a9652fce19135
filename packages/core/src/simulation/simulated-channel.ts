/**
 * A simulated channel's state, as the bot's store and a provider's cache would hold it: the working
 * context, the archive a pass reads (with the stubs microcompaction put in place of tool results,
 * and, with `retainArchive: 'unsummarized'`, only what no summary covers yet), and the prefix cache
 * that sees where each change rewrote the prompt. Like the bot's store (`ContextWriter`), it plans a
 * splice or a truncation on what it holds, with the core's planners, and applies it; it carries out
 * what `Simulation` decides (an append, stubs, a cut, a pass's summary and splice) and measures
 * usage, but decides nothing itself.
 */

import type { SplicePlan, TruncationPlan } from '../model/context-writes.js';
import { measureMessage } from '../model/measure-message.js';
import type { ArchivedMessage, ContextMessage, ContextView, Span } from '../model/model.js';
import { chatMessageTokens, UNCALIBRATED, usageOf } from '../model/tokens.js';
import { type ApplyOutcome, WorkingContext } from '../model/working-context.js';
import type { CompactionPlan } from '../plans/plan-compaction.js';
import { planEmergencyTruncation, type TruncationPlanResult } from '../plans/plan-emergency-truncation.js';
import { stubToolResults } from '../plans/plan-microcompaction.js';
import { planSplice, rawTokensThrough, type SummaryResult } from '../plans/plan-splice.js';
import { TRUNCATION_MARKER } from '../rendering/render-context.js';
import { type CacheBreakCause, PrefixCacheMeter, type PrefixCacheTotals } from '../usage/prefix-cache.js';
import type { SimulationOptions, TranscriptMessage } from './simulation-events.js';
import { type ArchiveSummary, summarizeFromArchive } from './summarize-from-archive.js';

/** What of `SimulationOptions` the channel's state is measured and kept by. */
export type SimulatedChannelOptions = Pick<
  SimulationOptions,
  | 'policy'
  | 'contextWindow'
  | 'maxOutputTokens'
  | 'reservedTokens'
  | 'promptHeadTokens'
  | 'tokenizer'
  | 'readHistory'
  | 'retainArchive'
  | 'cacheTtlSeconds'
>;

/** A cut made, or the planner's refusal (nothing changed). */
export type SimulatedTruncation =
  | Exclude<TruncationPlanResult, TruncationPlan>
  | { readonly kind: 'truncate'; readonly plan: TruncationPlan; readonly outcome: ApplyOutcome };

/** A pass's summary spliced, or the planner's refusal (nothing changed). */
export type SimulatedSplice =
  | Exclude<SplicePlan, { readonly kind: 'splice' }>
  | { readonly kind: 'splice'; readonly outcome: ApplyOutcome };

export class SimulatedChannel {
  readonly #options: SimulatedChannelOptions;
  readonly #context = new WorkingContext();
  /** Archived messages from seq `#archiveBase + 1` on (all of them unless `retainArchive` drops some). */
  #archive: ArchivedMessage[] = [];
  /** Tokens of each archived message, whole (the context may hold a clipped copy). */
  #archiveTokens: number[] = [];
  #archiveBase = 0;
  /** Stubs microcompaction put in place of tool results, by seq: what a later pass summarizes. */
  readonly #stubs = new Map<number, { readonly text: string; readonly tokens: number }>();
  /** The prompts an answer to every participant's message would send, as a prefix cache sees them. */
  readonly #cache: PrefixCacheMeter;
  readonly #markerTokens: number;

  constructor(options: SimulatedChannelOptions) {
    this.#options = options;
    this.#markerTokens = chatMessageTokens(options.tokenizer, TRUNCATION_MARKER);
    this.#cache = new PrefixCacheMeter(
      options.cacheTtlSeconds === undefined ? {} : { ttlMs: 1000 * options.cacheTtlSeconds },
    );
  }

  /** The channel's working context now (valid until the next change). */
  view(): ContextView {
    return this.#context.view();
  }

  get headSeq(): number {
    return this.#context.headSeq;
  }

  /** The archived messages kept, oldest first: every one unless `retainArchive` is `unsummarized`. */
  archive(): readonly ArchivedMessage[] {
    return this.#archive;
  }

  /** Every message archived, kept or dropped. */
  get archived(): number {
    return this.#archiveBase + this.#archive.length;
  }

  /** Archives `message` as the next seq and appends it to the context, clipped as the bot clips it. */
  append(message: TranscriptMessage): { readonly archived: ArchivedMessage; readonly entry: ContextMessage } {
    const { tokenizer, policy } = this.#options;
    const archived: ArchivedMessage = { seq: this.#context.headSeq + 1, ...message };
    const { entry, archivedTokens } = measureMessage(archived, tokenizer, policy.messageMaxTokens);
    this.#archive.push(archived);
    this.#archiveTokens.push(archivedTokens);
    this.#context.append(entry);
    return { archived, entry };
  }

  /** A reply prompt is sent at `now`: the context after the prompt head, as the cache serves it. */
  prompt(now: number): void {
    this.#cache.prompt(this.#promptHead() + this.#context.tokens, now);
  }

  /** Microcompaction: stubs in place of the raw tool results `seqs`. Returns how many were stubbed. */
  stub(seqs: readonly number[]): number {
    const stubs = stubToolResults(
      this.#context.view().raw,
      seqs,
      this.#options.tokenizer,
      this.#options.readHistory ?? true,
    );
    const first = stubs[0]?.seq;
    if (first !== undefined) this.#brokeAtRaw(first, 'microcompaction');
    this.#context.replaceRaw(stubs);
    for (const stub of stubs) this.#stubs.set(stub.seq, { text: stub.text, tokens: stub.tokens });
    return stubs.length;
  }

  /** The store's `truncate`: the emergency cut `planEmergencyTruncation` plans on the context now. */
  truncate(): SimulatedTruncation {
    const { policy } = this.#options;
    const plan = planEmergencyTruncation({
      context: this.#context.view(),
      fraction: policy.emergencyFraction,
      protectRecent: policy.protectRecent,
      markerTokens: this.#markerTokens,
    });
    if (plan.kind === 'nothing') return plan;
    const spans = [...this.#context.view().spans];
    const outcome = this.#context.applyTruncation(plan);
    this.#brokeAtSpans(spans, 'truncation');
    return { kind: 'truncate', plan, outcome };
  }

  /** The store's `splice`: `result` in place of what it covers, as `planSplice` plans it on the context now. */
  splice(result: SummaryResult): SimulatedSplice {
    const view = this.#context.view();
    const plan = planSplice(view, result, rawTokensThrough(view.raw, result.toSeq));
    if (plan.kind !== 'splice') return plan;
    const spans = [...view.spans];
    const outcome = this.#context.applySplice(plan);
    this.#brokeAtSpans(spans, 'splice');
    if (this.#options.retainArchive === 'unsummarized') this.#forgetSummarized();
    return { kind: 'splice', outcome };
  }

  /** The summary a worker starting pass `jobId` now would make of `plan`'s range. */
  summarize(jobId: string, plan: CompactionPlan): ArchiveSummary {
    return summarizeFromArchive({
      jobId,
      plan,
      context: this.#context.view(),
      archive: this.#archive,
      archiveTokens: this.#archiveTokens,
      archiveBase: this.#archiveBase,
      stubs: this.#stubs,
      tokenizer: this.#options.tokenizer,
      maxTokens: this.#options.policy.summaryMaxTokens,
    });
  }

  cacheTotals(): PrefixCacheTotals {
    return this.#cache.totals();
  }

  /** The context and the reserve: what the next prompt sends. */
  contextTokens(): number {
    return this.#context.tokens + this.#options.reservedTokens;
  }

  usage(contextTokens = this.#context.tokens): number {
    return usageOf({
      contextTokens,
      reservedTokens: this.#options.reservedTokens,
      contextWindow: this.#options.contextWindow,
      maxOutputTokens: this.#options.maxOutputTokens,
      calibration: UNCALIBRATED,
    });
  }

  /** Usage of the reserve alone: what no pass can free. */
  reservedUsage(): number {
    return this.usage(0);
  }

  /**
   * Drops the archived messages the leading summary spans cover: a pass reads a summary in its range
   * instead of its messages (`planSnapshot`), and a summarized seq is never raw or truncated again,
   * so no pass reads them. Keeps a long replay's memory bounded by what is not summarized yet.
   */
  #forgetSummarized(): void {
    let covered = 0;
    for (const span of this.#context.view().spans) {
      if (span.kind !== 'summary' || span.fromSeq !== covered + 1) break;
      covered = span.toSeq;
    }
    const drop = covered - this.#archiveBase;
    if (drop <= 0) return;
    this.#archive = this.#archive.slice(drop);
    this.#archiveTokens = this.#archiveTokens.slice(drop);
    this.#archiveBase = covered;
    for (const seq of this.#stubs.keys()) if (seq <= covered) this.#stubs.delete(seq);
  }

  /** Tokens every prompt starts with: the system prompt and the tools (`promptHeadTokens`). */
  #promptHead(): number {
    return this.#options.promptHeadTokens ?? this.#options.reservedTokens;
  }

  /** The prompt changed from the first span that differs from `before` on. */
  #brokeAtSpans(before: readonly Span[], cause: CacheBreakCause): void {
    const after = this.#context.view().spans;
    let at = this.#promptHead();
    for (let i = 0; i < before.length && i < after.length && sameSpan(before[i], after[i]); i++) {
      at += after[i]?.tokens ?? 0;
    }
    this.#cache.broke(at, cause);
  }

  /** The prompt changed from the raw message `seq` on. */
  #brokeAtRaw(seq: number, cause: CacheBreakCause): void {
    const view = this.#context.view();
    let at = this.#promptHead() + view.spans.reduce((n, span) => n + span.tokens, 0);
    for (const m of view.raw) {
      if (m.seq >= seq) break;
      at += m.tokens;
    }
    this.#cache.broke(at, cause);
  }
}

function sameSpan(a: Span | undefined, b: Span | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.kind === b.kind &&
    a.fromSeq === b.fromSeq &&
    a.toSeq === b.toSeq &&
    a.tokens === b.tokens &&
    (a.kind !== 'summary' || (b.kind === 'summary' && a.text === b.text))
  );
}
