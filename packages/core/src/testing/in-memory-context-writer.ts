/**
 * `ContextWriter` in memory, a part of `InMemoryChannelStore`: compaction's writes (a pass's splice,
 * an emergency truncation, microcompaction's stubs), each planned on the state it finds, as
 * `PgChannelStore` plans them under the channel lock. A splice is refused as taken back when a
 * take-back since its mark covers its range (the store's `InMemoryTakeBackLog`).
 */

import { countersOf } from '../model/channel-counters.js';
import { WorkingContext } from '../model/working-context.js';
import { planEmergencyTruncation } from '../plans/plan-emergency-truncation.js';
import { contextCopyOf } from '../plans/plan-message-rewrite.js';
import { planStubs } from '../plans/plan-microcompaction.js';
import { planSplice, rawTokensThrough, type SummaryResult, TAKEN_BACK_REASON } from '../plans/plan-splice.js';
import type {
  ContextWriter,
  SpliceOutcome,
  StubOutcome,
  StubRequest,
  TruncationOutcome,
  TruncationRequest,
} from '../ports/ports.js';
import { type InMemoryChannels, rangeOf, storedAt } from './in-memory-channel-state.js';
import type { InMemoryTakeBackLog } from './in-memory-take-back-log.js';

export class InMemoryContextWriter implements ContextWriter {
  readonly #channels: InMemoryChannels;
  readonly #takeBacks: InMemoryTakeBackLog;

  constructor(channels: InMemoryChannels, takeBacks: InMemoryTakeBackLog) {
    this.#channels = channels;
    this.#takeBacks = takeBacks;
  }

  async splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome> {
    const channel = this.#channels.get(channelKey);
    const context = channel?.context ?? new WorkingContext();
    const view = context.view();
    if (
      result.takeBackMark !== undefined &&
      this.#takeBacks.since(channelKey, result.takeBackMark, result).length > 0
    )
      return { kind: 'stale', reason: TAKEN_BACK_REASON };
    const plan = planSplice(view, result, rawTokensThrough(view.raw, result.toSeq));
    if (plan.kind !== 'splice') return plan;
    const before = context.view().spans;
    const applied = context.applySplice(plan);
    // A summary the splice replaced: the same job's span is no longer active.
    const active = new Set(context.view().spans.flatMap((s) => (s.kind === 'summary' ? [s.jobId] : [])));
    for (const span of before) {
      if (span.kind === 'summary' && !active.has(span.jobId)) {
        channel?.retired.push({ ...rangeOf(span), text: span.text, redacted: false });
      }
    }
    return { kind: 'splice', generation: context.generation, ...applied };
  }

  async truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome> {
    const context = this.#channels.get(channelKey)?.context;
    if (!context) return { kind: 'nothing', reason: 'empty' };
    const plan = planEmergencyTruncation({ context: context.view(), ...request });
    if (plan.kind === 'nothing') return plan;
    const { tokensBefore, tokensAfter } = context.applyTruncation(plan);
    return { kind: 'truncate', plan, generation: context.generation, tokensBefore, tokensAfter };
  }

  async stubToolResults(channelKey: string, request: StubRequest): Promise<StubOutcome> {
    const view = this.#channels.get(channelKey)?.context.view();
    const plan = planStubs(view && countersOf(view), view?.raw ?? [], request);
    if (plan.kind === 'stale') return plan;
    const channel = this.#channels.getOrCreate(channelKey);
    const stubs = plan.copies.map(({ seq, copy }) => {
      const stored = storedAt(channel, seq);
      const stub = contextCopyOf(stored, copy);
      // The archive keeps the result whole, and the stub a pass reads in its place.
      channel.archive[seq - 1] = { ...stored, stub: { text: stub.text, tokens: stub.tokens } };
      return stub;
    });
    channel.context.replaceRaw(stubs);
    channel.microcompaction.stubbed += stubs.length;
    channel.microcompaction.tokensSaved += plan.tokensSaved;
    const { generation, tokensBefore, tokensAfter } = plan;
    return { kind: 'stubbed', generation, tokensBefore, tokensAfter, stubbed: stubs.length };
  }
}
