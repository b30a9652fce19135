/**
 * What a person takes back, the bot no longer keeps: a deletion or an edit on the platform, applied
 * as the channel's `[privacy]` policy says, as a durable take-back. Runs in the channel's actor, in
 * order with its turns; everything here is a few store writes, and the one slow part (writing the
 * summaries that hold the old text again, an LLM call) is left to the take-back runner, so no turn
 * waits for it.
 *
 * A deletion (`on_delete = "redact"`):
 *
 * 1. what it reaches is planned: the deleted messages, the bot's turns that answered them
 *    (`planDeletion`), the history tools' results that quoted them later (copies archived under the
 *    tool's name) and the rest of those results' turns (the answer that may repeat what they quoted);
 * 2. those messages become tombstones (seq, role and author kept; raw copies in the context with them)
 *    and the take-back is recorded, in one transaction (`redactArchive`): from here on no compaction
 *    pass that read them before can land what it read, and any process can finish the take-back;
 * 3. the runner's fast half (`TakeBackRunner.settle`): the memories whose source range holds one of
 *    them go, checkpoints of runs over them are cleared, the active summaries holding them are set
 *    aside (`PENDING_SUMMARY`) and retired spans over them lose their text; the bot's replies that
 *    recalled a memory dropped here are taken back too (a second take-back, the same way);
 * 4. the runner completes it in the background: the summaries set aside are written again from the
 *    redacted archive, replicas are told, the spool's files are scrubbed, `takeback.completed`.
 *
 * An edit (`on_edit = "update"`) keeps only the new text in the archive, and replaces a raw copy in
 * place with its tokens counted again (clipped as an append clips it). With `"resummarize"` the edit
 * is recorded as a take-back of the old text, and its copies are traced the same way (memories,
 * checkpoints, summaries, and the history tools' results that quoted the old text, with their turns).
 *
 * A change to a message the archive never held is `unknown`; one applied before (a tombstone deleted
 * again, the same text again) is `unchanged`: a spooled change replayed twice changes nothing, and
 * the take-back the first one recorded is finished by the runner whatever happened to its process.
 *
 * A change that names no thread (`threadUnknown`: Slack sent neither `thread_ts` nor
 * `previous_message`) names its channel; `locate` finds the threads holding the messages the channel
 * does not, and the bot applies each part in its conversation's actor (`locateChange`).
 *
 * The parts:
 *
 *   the changes applied    this file (`MessageChanges`: locate, delete, edit, record the take-backs)
 *   where the copies are   `take-back-copies.ts` (the archive reads that find the text copied)
 *   what a change did      `change-report.ts` (`ChangeReport`, and the platform's answer; pure)
 *   what each one reaches  the pure plans of `@ebb/core` (`planDeletion`, `locateChange`, …)
 */
import type { TakeBackRunner } from '@ebb/compaction';
import { type EbbConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveReader,
  changeIds,
  type Forgetting,
  type Logger,
  locateChange,
  type MessageChange,
  type NewTakeBack,
  type PlatformChanges,
  planDeletion,
  REDACTED_MESSAGE,
  type StoredMessage,
  seqRanges,
  seqsOf,
  type TakeBack,
  type TakeBackLog,
  type Tokenizer,
  tombstone,
  toNewMessage,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { type ChangeReport, NOTHING } from './change-report.js';
import type { ChannelStates } from './channel-states.js';
import {
  historyCopies,
  quotingReplies,
  type RecallingReplies,
  readTurnsAfter,
  recallingReplies,
} from './take-back-copies.js';

export interface MessageChangesOptions {
  readonly config: () => EbbConfig;
  readonly channels: ArchiveReader & Forgetting & PlatformChanges;
  readonly takeBacks: Pick<TakeBackLog, 'pendingTakeBacks'>;
  /** Settles a take-back now and completes it in the background. */
  readonly runner: Pick<TakeBackRunner, 'settle' | 'complete'>;
  /** Finds the bot's replies whose prompt recalled one of these memories (derived copies). */
  readonly recalling?: RecallingReplies;
  readonly states: ChannelStates;
  readonly logger: Logger;
  /** After every change: for metrics. */
  readonly onChange?: (report: ChangeReport & { readonly platform: string }) => void;
}

export class MessageChanges {
  readonly #options: MessageChangesOptions;

  constructor(options: MessageChangesOptions) {
    this.#options = options;
  }

  /**
   * Where `change` applies (`locateChange`): as it is when it names its conversation; else its ids
   * are looked up in the channel, then the ones the channel does not hold in the channel's threads.
   * Reads only. Throws when the store fails (the caller spools the change as it came).
   */
  async locate(change: MessageChange): Promise<MessageChange[]> {
    if (!change.threadUnknown) return [change];
    const { channels } = this.#options;
    const ids = changeIds(change);
    const found = await channels.findByPlatformIds(change.channelKey, ids);
    const inChannel = found.map((f) => f.platformMessageId);
    const missing = ids.filter((id) => !inChannel.includes(id));
    const inThreads = missing.length === 0 ? [] : await channels.findInThreads(change.channelKey, missing);
    return locateChange(change, { inChannel, inThreads });
  }

  /** Applies a change, in the channel's actor. Throws when the store fails (the caller spools it). */
  async apply(change: MessageChange): Promise<ChangeReport> {
    const report = change.kind === 'deleted' ? await this.#delete(change) : await this.#edit(change);
    const log = this.#options.logger;
    const fields = {
      event: change.kind === 'deleted' ? 'message.deleted' : 'message.edited',
      channel: change.channelKey,
      ...report,
    };
    const what = change.kind === 'deleted' ? 'a deletion' : 'an edit';
    if (report.outcome === 'applied')
      log.info(
        fields,
        `applied ${what}: ${report.messages} message(s) rewritten (${report.replies} bot replies, ${report.copies} copies), ${report.memories} memories dropped, ${report.summaries} summaries being written again`,
      );
    else log.info(fields, `${what} changed nothing (${report.outcome})`);
    this.#options.onChange?.({ ...report, platform: change.platform });
    return report;
  }

  async #delete(change: Extract<MessageChange, { kind: 'deleted' }>): Promise<ChangeReport> {
    const { channels, config } = this.#options;
    const key = change.channelKey;
    const settings = resolveChannel(config(), key);
    if (settings.privacy.onDelete === 'ignore') return { kind: 'deleted', outcome: 'ignored', ...NOTHING };
    const found = await channels.findByPlatformIds(key, change.platformMessageIds);
    if (found.length === 0) return { kind: 'deleted', outcome: 'unknown', ...NOTHING };
    const prefix = await channels.loadPrefix(key);
    const archive = await readTurnsAfter(
      channels,
      key,
      found.map((f) => f.seq),
    );
    const plan = planDeletion({ prefix, deleted: found.map((f) => f.seq), archive });
    // The history tools' results that quoted them later are copies: they go with them, and so does
    // the rest of each result's turn (the answer that may repeat what it quoted).
    const copies = await historyCopies(channels, key, plan.redact);
    const bySeq = new Map([...archive, ...copies].map((m) => [m.seq, m]));
    const redacted = new Set([...seqsOf(plan.redact), ...copies.map((m) => m.seq)]);
    const removed = [...redacted]
      .flatMap((seq) => bySeq.get(seq) ?? [])
      .filter((m) => m.text !== REDACTED_MESSAGE)
      .sort((a, b) => a.seq - b.seq);
    // Deleted before: the tombstones and the take-back are in place, and the runner finishes it.
    if (removed.length === 0) return this.#unchanged('deleted', key);
    removed.push(...(await quotingReplies(channels, key, removed)));
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const ids = found.map((f) => f.platformMessageId);
    const taken = await this.#takeBack(key, removed, { kind: 'deleted', ids, tokenizer });
    const gone = new Set(removed.map((m) => m.seq));
    return {
      kind: 'deleted',
      outcome: 'applied',
      ...taken,
      replies: plan.replies.filter((seq) => gone.has(seq)).length,
      copies: copies.filter((c) => gone.has(c.seq)).length,
    };
  }

  /**
   * Tombstones `removed` with their take-back, settles it, and does the same for the bot's replies
   * that recalled a memory it dropped (they may have repeated it), until none is left; each take-back
   * is then completed in the background.
   */
  async #takeBack(
    key: string,
    removed: readonly StoredMessage[],
    how: {
      readonly kind: NewTakeBack['kind'];
      readonly ids: readonly string[];
      readonly tokenizer: Tokenizer;
    },
  ): Promise<Omit<ChangeReport, 'kind' | 'outcome' | 'replies' | 'copies'>> {
    const { channels, states, runner, recalling } = this.#options;
    const totals = { messages: 0, raw: 0, memories: 0, checkpoints: 0, summaries: 0 };
    const recorded: TakeBack[] = [];
    let batch = removed;
    let platformIds = how.ids;
    while (batch.length > 0) {
      const ranges = seqRanges(batch.map((m) => m.seq));
      const outcome = await channels.redactArchive(
        key,
        batch.map((m) => tombstone(m, how.tokenizer)),
        { kind: how.kind, ranges, platformMessageIds: platformIds },
      );
      if (outcome.raw > 0) states.markStale(key, outcome.generation);
      totals.messages += outcome.redacted;
      totals.raw += outcome.raw;
      if (!outcome.takeBack) break;
      recorded.push(outcome.takeBack);
      const settled = await runner.settle(outcome.takeBack);
      totals.memories += settled.memories;
      totals.checkpoints += settled.checkpoints;
      totals.summaries += settled.summaries;
      batch = await recallingReplies(channels, recalling, key, settled.droppedMemoryIds);
      platformIds = [];
    }
    for (const takeBack of recorded) runner.complete(takeBack);
    return { ...totals, takeBacks: recorded.map((t) => t.id) };
  }

  /** A change applied before: its take-backs are the runner's; `summaries` counts those still pending. */
  async #unchanged(kind: MessageChange['kind'], key: string): Promise<ChangeReport> {
    const pending = await this.#options.takeBacks.pendingTakeBacks(key);
    return { kind, outcome: 'unchanged', ...NOTHING, takeBacks: pending.map((t) => t.id) };
  }

  async #edit(change: Extract<MessageChange, { kind: 'edited' }>): Promise<ChangeReport> {
    const { channels, states, config, recalling } = this.#options;
    const key = change.channelKey;
    const settings = resolveChannel(config(), key);
    if (settings.privacy.onEdit === 'ignore') return { kind: 'edited', outcome: 'ignored', ...NOTHING };
    const [found] = await channels.findByPlatformIds(key, [change.platformMessageId]);
    if (!found) return { kind: 'edited', outcome: 'unknown', ...NOTHING };
    const [old] = await channels.readArchive(key, found.seq, found.seq);
    const text = change.text.replaceAll('\u0000', '');
    // The same text again (a replayed change), or a message deleted before: nothing to do.
    if (!old || old.text === text || old.text === REDACTED_MESSAGE) return this.#unchanged('edited', key);
    const range = seqRanges([found.seq]);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const resummarize = settings.privacy.onEdit === 'resummarize';
    // Read before the edit: the results that quoted the old text (and their turns).
    const copies = resummarize ? await historyCopies(channels, key, range) : [];
    const measured = toNewMessage(
      {
        role: old.role,
        author: old.author,
        text,
        ...(old.toolCalls === undefined ? {} : { toolCalls: old.toolCalls }),
        ...(old.toolCallId === undefined ? {} : { toolCallId: old.toolCallId }),
      },
      tokenizer,
      settings.compaction.messageMaxTokens,
    );
    const outcome = await channels.editMessage(key, {
      seq: found.seq,
      text: measured.text,
      tokens: measured.tokens,
      contextTokens: measured.contextTokens,
      ...(measured.contextText === undefined ? {} : { contextText: measured.contextText }),
      ...(measured.omittedTokens === undefined ? {} : { omittedTokens: measured.omittedTokens }),
      // Under "resummarize" the old text is taken back: its copies are traced from this row.
      ...(resummarize
        ? { takeBack: { kind: 'edited', ranges: range, platformMessageIds: [change.platformMessageId] } }
        : {}),
    });
    if (outcome.kind === 'missing') return { kind: 'edited', outcome: 'unknown', ...NOTHING };
    if (outcome.raw) states.markStale(key, outcome.generation);
    const report = {
      kind: 'edited' as const,
      outcome: 'applied' as const,
      ...NOTHING,
      messages: 1,
      raw: outcome.raw ? 1 : 0,
    };
    if (!outcome.takeBack) return report;
    const settled = await this.#options.runner.settle(outcome.takeBack);
    this.#options.runner.complete(outcome.takeBack);
    // The history tools' copies of the old text, their turns, and the replies that recalled what
    // the edit dropped: tombstoned as a deletion's copies are.
    const quoted = resummarize ? await quotingReplies(channels, key, [old]) : [];
    const derived = [
      ...copies,
      ...quoted,
      ...(await recallingReplies(channels, recalling, key, settled.droppedMemoryIds)),
    ].filter((m, i, all) => all.findIndex((x) => x.seq === m.seq) === i);
    const more =
      derived.length === 0
        ? undefined
        : await this.#takeBack(key, derived, { kind: 'edited', ids: [], tokenizer });
    return {
      ...report,
      messages: 1 + (more?.messages ?? 0),
      raw: report.raw + (more?.raw ?? 0),
      copies: copies.length,
      memories: settled.memories + (more?.memories ?? 0),
      checkpoints: settled.checkpoints + (more?.checkpoints ?? 0),
      summaries: settled.summaries + (more?.summaries ?? 0),
      takeBacks: [outcome.takeBack.id, ...(more?.takeBacks ?? [])],
    };
  }
}
