/**
 * `Forgetting` and `PlatformChanges` in memory (`ports/change-ports.ts`), a part of
 * `InMemoryChannelStore`: finding the messages to take back, tombstones and edits planned as
 * `PgChannelStore` plans them, retired summaries blanked and summaries written again put in place.
 * `redactArchive` and `editMessage` record their take-back in the store's `InMemoryTakeBackLog` in the
 * same step, as Postgres records it in their transaction.
 */

import { countersOf } from '../model/channel-counters.js';
import type { SeqRange, StoredMessage } from '../model/model.js';
import { PENDING_SUMMARY } from '../plans/plan-message-change.js';
import {
  contextCopyOf,
  messageEdited,
  planArchiveRedaction,
  planMessageEdit,
} from '../plans/plan-message-rewrite.js';
import { overlapsAny } from '../plans/plan-redaction.js';
import { planSummaryReplacement } from '../plans/plan-summary-replacement.js';
import type { NewTakeBack } from '../plans/take-back.js';
import type {
  AuthoredSeqs,
  EarlierSummary,
  EditMessageOutcome,
  Forgetting,
  MessageEdit,
  PlatformChanges,
  PlatformSeq,
  RedactArchiveOutcome,
  ReplaceSummaryOutcome,
  SummaryReplacement,
} from '../ports/ports.js';
import { type InMemoryChannels, type RetiredSpan, rangeOf, storedAt } from './in-memory-channel-state.js';
import type { InMemoryTakeBackLog } from './in-memory-take-back-log.js';

export class InMemoryForgetting implements Forgetting, PlatformChanges {
  readonly #channels: InMemoryChannels;
  readonly #takeBacks: InMemoryTakeBackLog;

  constructor(channels: InMemoryChannels, takeBacks: InMemoryTakeBackLog) {
    this.#channels = channels;
    this.#takeBacks = takeBacks;
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
    const channel = this.#channels.getOrCreate(channelKey);
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
    const found = this.#channels.found(channelKey, seqs);
    const plan = planArchiveRedaction(this.#channels.counters(channelKey), found, tombstones);
    // Recorded when the archive held any of the seqs, a tombstone rewritten included (a retry).
    const recorded =
      found.length > 0 && takeBack !== undefined ? this.#takeBacks.record(channelKey, takeBack) : undefined;
    if (plan.tombstones.length > 0) {
      const channel = this.#channels.getOrCreate(channelKey);
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

  async redactRetiredSpans(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    let changed = 0;
    for (const span of this.#channels.get(channelKey)?.retired ?? []) {
      if (span.redacted || !overlapsAny(span, ranges)) continue;
      span.redacted = true;
      changed++;
    }
    return changed;
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
    const [found] = this.#channels.found(channelKey, [edit.seq]);
    const plan = planMessageEdit(this.#channels.counters(channelKey), found, edit);
    if (plan.kind === 'missing') return plan;
    const channel = this.#channels.getOrCreate(channelKey);
    // The archive keeps only the new text: no stub of the old one.
    const { stub: _stub, ...rest } = storedAt(channel, edit.seq);
    const edited = { ...rest, text: edit.text, tokens: edit.tokens };
    channel.archive[edit.seq - 1] = edited;
    if (plan.raw) channel.context.replaceRaw([contextCopyOf(edited, plan.copy)]);
    const takeBack =
      edit.takeBack === undefined ? undefined : this.#takeBacks.record(channelKey, edit.takeBack);
    return messageEdited(plan, takeBack);
  }
}
