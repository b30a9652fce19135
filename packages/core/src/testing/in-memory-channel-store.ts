/**
 * The channel ports in memory, for tests: the same semantics as `PgChannelStore`
 * (one contract suite runs against both), no I/O. Each call runs to completion before the next
 * starts, so the channel lock of the Postgres store has nothing to guard here.
 */

import { type ChannelCounters, countersOf } from '../model/channel-counters.js';
import { messageTime } from '../model/message-time.js';
import type { ContextView, PrefixView, SeqRange, StoredMessage } from '../model/model.js';
import { isThreadKeyOf } from '../model/platform.js';
import { type Calibration, UNCALIBRATED } from '../model/tokens.js';
import { WorkingContext } from '../model/working-context.js';
import { planEmergencyTruncation } from '../plans/plan-emergency-truncation.js';
import { PENDING_SUMMARY } from '../plans/plan-message-change.js';
import {
  contextCopyOf,
  type FoundMessage,
  measuredCopy,
  planArchiveRedaction,
  planMessageEdit,
} from '../plans/plan-message-rewrite.js';
import { planStubs } from '../plans/plan-microcompaction.js';
import { overlapsAny, REDACTED_MESSAGE } from '../plans/plan-redaction.js';
import { planSplice, rawTokensThrough, type SummaryResult, TAKEN_BACK_REASON } from '../plans/plan-splice.js';
import { planSummaryReplacement } from '../plans/plan-summary-replacement.js';
import type { NewTakeBack } from '../plans/take-back.js';
import { checkedFence, FencedAppendError } from '../ports/append-fence.js';
import type {
  AppendOptions,
  AppendResult,
  ArchiveReader,
  ArchiveTime,
  AuthoredSeqs,
  ChannelDirectory,
  ChannelSummary,
  ContextDelta,
  ContextWriter,
  EarlierSummary,
  EditMessageOutcome,
  Forgetting,
  HeldMessage,
  LoadedChannel,
  MessageEdit,
  NewMessage,
  PlatformChanges,
  PlatformSeq,
  RedactArchiveOutcome,
  ReplaceSummaryOutcome,
  SpliceOutcome,
  StubOutcome,
  StubRequest,
  SummaryReplacement,
  TruncationOutcome,
  TruncationRequest,
  TurnLog,
} from '../ports/ports.js';
import { InvariantError } from '../support/errors.js';
import { InMemoryTakeBackLog } from './in-memory-take-back-log.js';

interface ChannelState {
  readonly context: WorkingContext;
  /** Whole messages; index seq - 1. */
  readonly archive: StoredMessage[];
  readonly platformIds: Map<string, number>;
  /** The memories each reply's prompt recalled, by seq (`NewMessage.recalledMemories`). */
  readonly recalled: Map<number, readonly string[]>;
  /** When each message was archived (epoch ms), as Postgres's `created_at`. */
  readonly archivedAt: Map<number, number>;
  calibration: Calibration;
  /** Microcompaction's counters (`ChannelSummary.microcompaction`). */
  readonly microcompaction: { stubbed: number; tokensSaved: number };
  /** Summary spans a splice or a forget replaced, as Postgres keeps them (retired, not deleted). */
  readonly retired: RetiredSpan[];
  /** The greatest fence an append brought (`AppendOptions.fence`); 0 before any. */
  fence: number;
}

interface RetiredSpan {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly text: string;
  redacted: boolean;
}

const EMPTY_VIEW: ContextView = Object.freeze({ generation: 0, headSeq: 0, spans: [], raw: [], tokens: 0 });

export class InMemoryChannelStore
  implements TurnLog, ArchiveReader, ContextWriter, Forgetting, PlatformChanges, ChannelDirectory
{
  readonly #channels = new Map<string, ChannelState>();
  /** The take-backs `redactArchive` and `editMessage` record, as Postgres records them in their transaction. */
  readonly takeBacks: InMemoryTakeBackLog;

  constructor(options: { readonly takeBacks?: InMemoryTakeBackLog } = {}) {
    this.takeBacks = options.takeBacks ?? new InMemoryTakeBackLog();
  }

  async append(channelKey: string, message: NewMessage, options: AppendOptions = {}): Promise<AppendResult> {
    const fence = checkedFence(options.fence);
    this.#admit(channelKey, fence);
    return this.#append(channelKey, message, fence);
  }

  async appendAll(
    channelKey: string,
    messages: readonly NewMessage[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    if (messages.some((m) => m.platformMessageId !== undefined)) {
      throw new InvariantError(
        'appendAll takes messages without a platform id (a tool call and its results)',
      );
    }
    const fence = checkedFence(options.fence);
    this.#admit(channelKey, fence);
    // Synchronously, in one go: no other call can run between them.
    return messages.map((message) => this.#append(channelKey, message, fence));
  }

  /** Refuses a fence lower than the channel's, before anything is stored (a redelivery too). */
  #admit(channelKey: string, fence: number | undefined): void {
    const stored = this.#channels.get(channelKey)?.fence ?? 0;
    if (fence !== undefined && fence < stored) throw new FencedAppendError(channelKey, fence, stored);
  }

  #append(channelKey: string, message: NewMessage, fence: number | undefined): AppendResult {
    const channel = this.#channel(channelKey);
    const { context } = channel;
    const id = message.platformMessageId;
    const existing = id === undefined ? undefined : channel.platformIds.get(id);
    if (existing !== undefined) {
      return {
        seq: existing,
        inserted: false,
        generation: context.generation,
        contextTokens: context.tokens,
        headSeq: context.headSeq,
      };
    }
    const seq = context.headSeq + 1;
    const base = {
      seq,
      role: message.role,
      author: message.author,
      ...(message.ts === undefined ? {} : { ts: message.ts }),
      ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((c) => ({ ...c })) }),
      ...(message.toolCallId === undefined ? {} : { toolCallId: message.toolCallId }),
    };
    const archived: StoredMessage = { ...base, text: message.text, tokens: message.tokens };
    context.append(contextCopyOf(archived, measuredCopy(message)));
    channel.archive.push(archived);
    if (id !== undefined) channel.platformIds.set(id, seq);
    if (message.recalledMemories?.length) channel.recalled.set(seq, [...message.recalledMemories]);
    channel.archivedAt.set(seq, Date.now());
    if (fence !== undefined) channel.fence = fence;
    return {
      seq,
      inserted: true,
      generation: context.generation,
      contextTokens: context.tokens,
      headSeq: seq,
    };
  }

  async loadContext(channelKey: string): Promise<ContextView> {
    return this.#viewOf(channelKey);
  }

  async loadAfter(channelKey: string, afterSeq: number): Promise<ContextDelta> {
    const { generation, headSeq, tokens, raw } = this.#channels.get(channelKey)?.context.view() ?? EMPTY_VIEW;
    return { generation, headSeq, tokens, raw: raw.filter((m) => m.seq > afterSeq) };
  }

  /** A copy of the channel's context: the caller's view does not move with later writes. */
  #viewOf(channelKey: string): ContextView {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return EMPTY_VIEW;
    return { ...view, spans: [...view.spans], raw: [...view.raw] };
  }

  async loadChannel(channelKey: string): Promise<LoadedChannel> {
    return {
      context: this.#viewOf(channelKey),
      calibration: this.#channels.get(channelKey)?.calibration ?? UNCALIBRATED,
    };
  }

  async loadPrefix(channelKey: string): Promise<PrefixView> {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return { generation: 0, headSeq: 0, spans: [] };
    return { generation: view.generation, headSeq: view.headSeq, spans: [...view.spans] };
  }

  async generation(channelKey: string): Promise<number> {
    return this.#channels.get(channelKey)?.context.generation ?? 0;
  }

  async readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
    const archive = this.#channels.get(channelKey)?.archive ?? [];
    return archive.slice(Math.max(0, fromSeq - 1), Math.max(0, toSeq));
  }

  async readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]> {
    const authors = new Set((await this.readArchive(channelKey, fromSeq, toSeq)).map((m) => m.author));
    return [...authors].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome> {
    const channel = this.#channels.get(channelKey);
    const context = channel?.context ?? new WorkingContext();
    const view = context.view();
    if (
      result.takeBackMark !== undefined &&
      this.takeBacks.since(channelKey, result.takeBackMark, result).length > 0
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
    const channel = this.#channel(channelKey);
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

  async findAuthored(author: string, only?: string): Promise<AuthoredSeqs[]> {
    return [...this.#channels.entries()]
      .filter(([channelKey]) => only === undefined || channelKey === only)
      .map(([channelKey, c]) => ({
        channelKey,
        seqs: c.archive.filter((m) => m.author === author).map((m) => m.seq),
      }))
      .filter((a) => a.seqs.length > 0)
      .sort((a, b) => (a.channelKey < b.channelKey ? -1 : a.channelKey > b.channelKey ? 1 : 0));
  }

  async findContaining(text: string): Promise<AuthoredSeqs[]> {
    const needle = text.toLowerCase();
    const holds = (m: { text: string; toolCalls?: readonly { name: string; arguments: string }[] }) =>
      [m.text, ...(m.toolCalls ?? []).flatMap((c) => [c.name, c.arguments])].some((t) =>
        t.toLowerCase().includes(needle),
      );
    return [...this.#channels.entries()]
      .map(([channelKey, c]) => ({ channelKey, seqs: c.archive.filter(holds).map((m) => m.seq) }))
      .filter((a) => a.seqs.length > 0)
      .sort((a, b) => (a.channelKey < b.channelKey ? -1 : a.channelKey > b.channelKey ? 1 : 0));
  }

  async replaceSummary(channelKey: string, replacement: SummaryReplacement): Promise<ReplaceSummaryOutcome> {
    const view = this.#channels.get(channelKey)?.context.view();
    const plan = planSummaryReplacement(view && countersOf(view), view?.spans ?? [], replacement);
    if (plan.kind === 'missing') return plan;
    const channel = this.#channel(channelKey);
    const { replaced } = plan;
    channel.retired.push({ ...rangeOf(replaced), text: replaced.text, redacted: false });
    const { createdGeneration: _created, ...span } = plan.span;
    channel.context.replaceSummary(span);
    const { generation, tokensBefore, tokensAfter } = plan;
    return { kind: 'replaced', generation, tokensBefore, tokensAfter };
  }

  async redactArchive(
    channelKey: string,
    tombstones: readonly StoredMessage[],
    takeBack: NewTakeBack | undefined,
  ): Promise<RedactArchiveOutcome> {
    const seqs = tombstones.map((t) => t.seq);
    const found = this.#found(channelKey, seqs);
    const plan = planArchiveRedaction(this.#counters(channelKey), found, tombstones);
    // Recorded when the archive held any of the seqs, a tombstone rewritten included (a retry).
    const recorded =
      found.length > 0 && takeBack !== undefined ? this.takeBacks.record(channelKey, takeBack) : undefined;
    if (plan.tombstones.length > 0) {
      const channel = this.#channel(channelKey);
      // The stub of a stubbed result goes with its text, as Postgres clears `stubbed`.
      for (const { tombstone } of plan.tombstones) {
        const { stub: _stub, ...t } = tombstone;
        channel.archive[t.seq - 1] = t;
      }
      channel.context.replaceRaw(
        plan.copies.map(({ seq, copy }) => contextCopyOf(storedAt(channel, seq), copy)),
      );
    }
    return {
      redacted: plan.tombstones.length,
      raw: plan.copies.length,
      generation: plan.generation,
      ...(recorded === undefined ? {} : { takeBack: recorded }),
    };
  }

  async summaryBefore(
    channelKey: string,
    fromSeq: number,
    beforeSeq: number,
  ): Promise<EarlierSummary | undefined> {
    const found = (this.#channels.get(channelKey)?.retired ?? [])
      .filter(
        (s) => s.fromSeq === fromSeq && s.toSeq < beforeSeq && !s.redacted && s.text !== PENDING_SUMMARY,
      )
      .reduce<RetiredSpan | undefined>(
        (best, s) => (best === undefined || s.toSeq >= best.toSeq ? s : best),
        undefined,
      );
    return found && { fromSeq: found.fromSeq, toSeq: found.toSeq, text: found.text };
  }

  async archiveTimes(channelKey: string, afterSeq: number, limit: number): Promise<ArchiveTime[]> {
    const channel = this.#channels.get(channelKey);
    if (!channel) return [];
    return channel.archive
      .filter((m) => m.seq > afterSeq)
      .slice(0, Math.max(0, limit))
      .map((m) => ({
        seq: m.seq,
        at: messageTime(m.ts) ?? channel.archivedAt.get(m.seq) ?? 0,
        taken: m.text === REDACTED_MESSAGE,
      }));
  }

  async findRecalling(channelKey: string, memoryIds: readonly string[]): Promise<number[]> {
    const wanted = new Set(memoryIds);
    return [...(this.#channels.get(channelKey)?.recalled ?? [])]
      .filter(([, ids]) => ids.some((id) => wanted.has(id)))
      .map(([seq]) => seq)
      .sort((a, b) => a - b);
  }

  async findInThreads(channelKey: string, platformMessageIds: readonly string[]): Promise<HeldMessage[]> {
    const wanted = [...new Set(platformMessageIds)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return [...this.#channels.keys()]
      .filter((key) => isThreadKeyOf(key, channelKey))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap((key) => {
        const ids = this.#channels.get(key)?.platformIds;
        return wanted
          .filter((id) => ids?.has(id))
          .map((platformMessageId) => ({ channelKey: key, platformMessageId }));
      });
  }

  async findByPlatformIds(channelKey: string, platformMessageIds: readonly string[]): Promise<PlatformSeq[]> {
    const ids = this.#channels.get(channelKey)?.platformIds;
    if (!ids) return [];
    return [...new Set(platformMessageIds)]
      .flatMap((platformMessageId) => {
        const seq = ids.get(platformMessageId);
        return seq === undefined ? [] : [{ platformMessageId, seq }];
      })
      .sort((a, b) => a.seq - b.seq);
  }

  async editMessage(channelKey: string, edit: MessageEdit): Promise<EditMessageOutcome> {
    const [found] = this.#found(channelKey, [edit.seq]);
    const plan = planMessageEdit(this.#counters(channelKey), found, edit);
    if (plan.kind === 'missing') return plan;
    const channel = this.#channel(channelKey);
    // The archive keeps only the new text: no stub of the old one.
    const { stub: _stub, ...rest } = storedAt(channel, edit.seq);
    const edited = { ...rest, text: edit.text, tokens: edit.tokens };
    channel.archive[edit.seq - 1] = edited;
    if (plan.raw) channel.context.replaceRaw([contextCopyOf(edited, plan.copy)]);
    const takeBack =
      edit.takeBack === undefined ? undefined : this.takeBacks.record(channelKey, edit.takeBack);
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

  async redactRetiredSpans(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    let changed = 0;
    for (const span of this.#channels.get(channelKey)?.retired ?? []) {
      if (span.redacted || !overlapsAny(span, ranges)) continue;
      span.redacted = true;
      changed++;
    }
    return changed;
  }

  async calibration(channelKey: string): Promise<Calibration> {
    return this.#channels.get(channelKey)?.calibration ?? UNCALIBRATED;
  }

  async setCalibration(channelKey: string, calibration: Calibration): Promise<void> {
    this.#channel(channelKey).calibration = { factor: calibration.factor, samples: calibration.samples };
  }

  async listChannels(): Promise<ChannelSummary[]> {
    return [...this.#channels.keys()]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((key) => this.#summaryOf(key));
  }

  async channelSummary(channelKey: string): Promise<ChannelSummary | undefined> {
    return this.#channels.has(channelKey) ? this.#summaryOf(channelKey) : undefined;
  }

  #summaryOf(key: string): ChannelSummary {
    const channel = this.#channels.get(key);
    const { generation, headSeq, tokens } = channel?.context.view() ?? EMPTY_VIEW;
    const microcompaction = { stubbed: 0, tokensSaved: 0, ...channel?.microcompaction };
    const calibration = channel?.calibration ?? UNCALIBRATED;
    return { key, headSeq, generation, tokens, microcompaction, calibration };
  }

  /** The channel's counters, as a write plans on them; undefined when the store holds no such channel. */
  #counters(channelKey: string): ChannelCounters | undefined {
    const view = this.#channels.get(channelKey)?.context.view();
    return view && countersOf(view);
  }

  /**
   * The archived messages at `seqs` (those the archive holds, each once), with the tokens of their
   * raw copy where they are raw: what a rewrite plans on (see `FoundMessage`).
   */
  #found(channelKey: string, seqs: readonly number[]): FoundMessage[] {
    const channel = this.#channels.get(channelKey);
    if (!channel) return [];
    const raw = new Map(channel.context.view().raw.map((m) => [m.seq, m]));
    return [...new Set(seqs)].flatMap((seq) => {
      const stored = channel.archive[seq - 1];
      return stored?.seq === seq ? [{ seq, tokens: (raw.get(seq) ?? stored).tokens }] : [];
    });
  }

  #channel(channelKey: string): ChannelState {
    let channel = this.#channels.get(channelKey);
    if (!channel) {
      channel = {
        context: new WorkingContext(),
        archive: [],
        retired: [],
        microcompaction: { stubbed: 0, tokensSaved: 0 },
        platformIds: new Map(),
        recalled: new Map(),
        archivedAt: new Map(),
        calibration: UNCALIBRATED,
        fence: 0,
      };
      this.#channels.set(channelKey, channel);
    }
    return channel;
  }
}

/** The archived message at `seq`, which a plan found there. */
function storedAt(channel: ChannelState, seq: number): StoredMessage {
  const stored = channel.archive[seq - 1];
  if (stored?.seq !== seq) throw new InvariantError(`the archive holds no seq ${seq}`);
  return stored;
}

function rangeOf(span: SeqRange): SeqRange {
  return { fromSeq: span.fromSeq, toSeq: span.toSeq };
}
