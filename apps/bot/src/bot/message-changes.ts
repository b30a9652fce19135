/**
 * What a person takes back, the bot no longer keeps: a deletion or an edit on the platform, applied
 * to the archive, the working context, the memories and the checkpoints, as the channel's `[privacy]`
 * policy says. Runs in the channel's actor, in order with its turns; everything here is a few store
 * writes, and the one slow part (writing the summaries that hold the old text again, an LLM call)
 * is queued (`RedactionPasses`), so no turn waits for it.
 *
 * A deletion (`on_delete = "redact"`), in an order a failure part-way leaves re-runnable (the
 * platform id finds the messages again, and their text decides the memories, so the text goes last):
 *
 * 1. the deleted messages and the bot's turns that answered them (`planDeletion`), and the history
 *    tools' results that quoted them later (copies archived under the tool's name);
 * 2. the memories over them whose text came from them are dropped (`memoriesTakenBack`), and taken
 *    out of every checkpoint;
 * 3. the checkpoints of runs over them are cleared;
 * 4. the active summaries holding them are set aside (`PENDING_SUMMARY`: one store write, so no
 *    prompt from now on shows them), then retired spans over them lose their text;
 * 5. the archived messages become tombstones (seq, role and author kept), raw copies in the context
 *    with them (the generation moves, so every bot reloads);
 * 6. the summaries set aside are written again from the redacted archive: queued.
 *
 * An edit (`on_edit = "update"`) keeps only the new text in the archive, and replaces a raw copy in
 * place with its tokens counted again (clipped as an append clips it). With `"resummarize"` it also
 * does 2, 3, 4 and 6 for the old text, the summaries written from the archive as edited.
 *
 * A change to a message the archive never held is a no-op; so is a change applied before (a
 * tombstone deleted again, the same text again): a spooled change replayed twice changes nothing.
 *
 * A change that names no thread (`threadUnknown`: Slack sent neither `thread_ts` nor
 * `previous_message`) names its channel; `locate` finds the threads holding the messages the channel
 * does not, and the bot applies each part in its conversation's actor (`locateChange`).
 */
import { type EbbConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveEditor,
  type ArchiveReader,
  type CheckpointEraser,
  changeIds,
  HISTORY_TOOL_NAMES,
  historyResultsQuoting,
  type Logger,
  locateChange,
  type MemoryStore,
  type MessageChange,
  memoriesOver,
  memoriesTakenBack,
  overlapsAny,
  PENDING_SUMMARY,
  planDeletion,
  REDACTED_MESSAGE,
  type RunStore,
  type SeqRange,
  type StoredMessage,
  seqRanges,
  seqsOf,
  spansToResummarize,
  spanTokens,
  type Tokenizer,
  tombstone,
  toNewMessage,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import type { ChannelStates } from './channel-states.js';
import type { AfterPasses, RedactionPasses } from './redaction-passes.js';

/** Recent runs of the channel looked through for passes in flight over a message taken back. */
const IN_FLIGHT_LOOKBACK = 50;
/** Messages read past a deleted one to find the turn that answered it: room for a turn's tool steps. */
const REPLY_LOOKAHEAD = 200;

/** What one change did, for the log line and the metrics. */
export interface ChangeReport {
  readonly kind: MessageChange['kind'];
  /** `applied`; `ignored` by the channel's `[privacy]` policy; `unknown`: the archive never held it; `unchanged`: applied before. */
  readonly outcome: 'applied' | 'ignored' | 'unknown' | 'unchanged';
  /** Archived messages overwritten (the deleted ones and the bot's replies; the edited one). */
  readonly messages: number;
  readonly replies: number;
  /** The history tools' results among them that had quoted a deleted message. */
  readonly copies: number;
  /** Of those, copies raw in the context that changed with them. */
  readonly raw: number;
  readonly memories: number;
  readonly checkpoints: number;
  /** Active summaries queued to be written again. */
  readonly summaries: number;
}

export interface MessageChangesOptions {
  readonly config: () => EbbConfig;
  readonly channels: ArchiveReader & ArchiveEditor;
  readonly memories: MemoryStore;
  /** Passes in flight over a change (`recent`), and the checkpoints it erases. */
  readonly runs: Pick<RunStore, 'recent'> & CheckpointEraser;
  readonly states: ChannelStates;
  readonly passes: RedactionPasses;
  readonly logger: Logger;
  /** After every change: for metrics. */
  readonly onChange?: (report: ChangeReport & { readonly platform: string }) => void;
}

/** What a deletion or an edit takes back from the memories over its ranges. */
interface TakenBack {
  readonly removed: readonly StoredMessage[];
  /** Every seq the change redacts: none of them is evidence that a memory still stands. */
  readonly redacted: ReadonlySet<number>;
  /** An edited message's new text, standing in for the old one. */
  readonly replacement?: StoredMessage;
}

const NOTHING = {
  messages: 0,
  replies: 0,
  copies: 0,
  raw: 0,
  memories: 0,
  checkpoints: 0,
  summaries: 0,
} as const;

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
        `applied ${what}: ${report.messages} message(s) rewritten (${report.replies} bot replies), ${report.memories} memories dropped, ${report.summaries} summaries queued`,
      );
    else log.info(fields, `${what} changed nothing (${report.outcome})`);
    this.#options.onChange?.({ ...report, platform: change.platform });
    return report;
  }

  async #delete(change: Extract<MessageChange, { kind: 'deleted' }>): Promise<ChangeReport> {
    const { channels, runs, states, config } = this.#options;
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
    // The history tools' results that quoted them later are copies: they go with them.
    const copies = await this.#historyCopies(key, plan.redact);
    const ranges =
      copies.length === 0 ? plan.redact : seqRanges([...seqsOf(plan.redact), ...copies.map((m) => m.seq)]);
    const redacted = new Set(seqsOf(ranges));
    // One row per seq: a copy read again by #historyCopies stands for the archive's.
    const bySeq = new Map([...archive, ...copies].map((m) => [m.seq, m]));
    const removed = [...bySeq.values()].filter((m) => redacted.has(m.seq) && m.text !== REDACTED_MESSAGE);
    // Deleted before: the tombstones are in place. A summary still set aside lost its pass (the
    // process stopped before it ran): queued again.
    if (removed.length === 0) {
      const waiting = spansToResummarize(prefix, ranges).filter((s) => s.text === PENDING_SUMMARY);
      const summaries = await this.#queue(key, ranges, waiting.length);
      return { kind: 'deleted', outcome: 'unchanged', ...NOTHING, summaries };
    }
    const taken: TakenBack = { removed, redacted };
    const memories = await this.#dropMemories(key, ranges, taken);
    const checkpoints = await runs.clearCheckpoints(key, ranges);
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const summaries = await this.#setAside(key, ranges, tokenizer);
    await channels.redactRetiredSpans(key, ranges);
    const outcome = await channels.redactArchive(
      key,
      removed.map((m) => tombstone(m, tokenizer)),
    );
    if (outcome.raw > 0) states.markStale(key, outcome.generation);
    // Passes that read these messages before now may land their text later: the queued pass waits
    // them out, then writes what they put in place again and drops what they learned from it.
    await this.#queue(key, ranges, summaries, () => this.#dropMemories(key, ranges, taken));
    return {
      kind: 'deleted',
      outcome: 'applied',
      messages: outcome.redacted,
      replies: plan.replies.filter((seq) => removed.some((m) => m.seq === seq)).length,
      copies: copies.filter((c) => removed.includes(c)).length,
      raw: outcome.raw,
      memories,
      checkpoints,
      summaries,
    };
  }

  /**
   * The results of the history tools (`search_history`, `read_history`) after the first of `ranges`
   * that quote a seq in them: copies of the messages, archived under the tool's name.
   */
  async #historyCopies(key: string, ranges: readonly SeqRange[]): Promise<StoredMessage[]> {
    const { channels } = this.#options;
    const after = ranges[0]?.fromSeq ?? 0;
    const seqs: number[] = [];
    for (const tool of HISTORY_TOOL_NAMES)
      for (const found of await channels.findAuthored(tool, key))
        seqs.push(...found.seqs.filter((s) => s > after));
    if (seqs.length === 0) return [];
    const results: StoredMessage[] = [];
    for (const r of seqRanges(seqs)) results.push(...(await channels.readArchive(key, r.fromSeq, r.toSeq)));
    const quoting = new Set(historyResultsQuoting(results, ranges));
    return results.filter((m) => quoting.has(m.seq));
  }

  async #edit(change: Extract<MessageChange, { kind: 'edited' }>): Promise<ChangeReport> {
    const { channels, runs, states, config } = this.#options;
    const key = change.channelKey;
    const settings = resolveChannel(config(), key);
    if (settings.privacy.onEdit === 'ignore') return { kind: 'edited', outcome: 'ignored', ...NOTHING };
    const [found] = await channels.findByPlatformIds(key, [change.platformMessageId]);
    if (!found) return { kind: 'edited', outcome: 'unknown', ...NOTHING };
    const [old] = await channels.readArchive(key, found.seq, found.seq);
    const text = change.text.replaceAll('\u0000', '');
    // The same text again (a replayed change), or a message deleted before: nothing to do.
    if (!old || old.text === text || old.text === REDACTED_MESSAGE)
      return { kind: 'edited', outcome: 'unchanged', ...NOTHING };
    const range = seqRanges([found.seq]);
    let memories = 0;
    let checkpoints = 0;
    let summaries = 0;
    const tokenizer = await loadTokenizer(settings.llm.encoding);
    const resummarize = settings.privacy.onEdit === 'resummarize';
    // The new text is kept: only what the old one alone said goes.
    const taken: TakenBack = { removed: [old], redacted: new Set(), replacement: { ...old, text } };
    if (resummarize) {
      memories = await this.#dropMemories(key, range, taken);
      checkpoints = await runs.clearCheckpoints(key, range);
      summaries = await this.#setAside(key, range, tokenizer);
      await channels.redactRetiredSpans(key, range);
    }
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
    });
    if (outcome.kind === 'missing') return { kind: 'edited', outcome: 'unknown', ...NOTHING };
    if (outcome.raw) states.markStale(key, outcome.generation);
    if (resummarize) await this.#queue(key, range, summaries, () => this.#dropMemories(key, range, taken));
    return {
      kind: 'edited',
      outcome: 'applied',
      messages: 1,
      replies: 0,
      copies: 0,
      raw: outcome.raw ? 1 : 0,
      memories,
      checkpoints,
      summaries,
    };
  }

  /**
   * Drops the memories over `ranges` whose text came from the messages taken back (judged against
   * the rest of their ranges), out of every checkpoint too. Returns how many went.
   */
  async #dropMemories(
    key: string,
    ranges: readonly SeqRange[],
    { removed, redacted, replacement }: TakenBack,
  ): Promise<number> {
    const { memories, channels, runs } = this.#options;
    const candidates = memoriesOver(await memories.list({ channelKey: key }), ranges);
    if (candidates.length === 0) return 0;
    const gone = new Set(removed.map((m) => m.seq));
    const kept: StoredMessage[] = replacement ? [replacement] : [];
    for (const r of seqRanges(candidates.flatMap((m) => seqsOf([m])))) {
      const archived = await channels.readArchive(key, r.fromSeq, r.toSeq);
      kept.push(...archived.filter((m) => !gone.has(m.seq) && !redacted.has(m.seq)));
    }
    const ids = new Set(memoriesTakenBack(candidates, removed, kept));
    const dropped = candidates.filter((m) => ids.has(m.id));
    if (dropped.length === 0) return 0;
    // A checkpoint of an unfinished run would store a dropped memory again on its retry.
    await runs.dropCheckpointMemories(dropped.map((m) => m.text));
    return memories.forget(dropped.map((m) => m.id));
  }

  /**
   * Puts `PENDING_SUMMARY` in place of every active summary holding `ranges` (each replaced under the
   * channel lock, as `ebb forget` replaces one), so no prompt shows them until their queued pass
   * writes them again. Returns how many summaries hold `ranges` (set aside now or before).
   */
  async #setAside(key: string, ranges: readonly SeqRange[], tokenizer: Tokenizer): Promise<number> {
    const { channels, states } = this.#options;
    const spans = spansToResummarize(await channels.loadPrefix(key), ranges);
    const stamp = Date.now();
    for (const span of spans) {
      if (span.text === PENDING_SUMMARY) continue;
      const range = { fromSeq: span.fromSeq, toSeq: span.toSeq };
      const outcome = await channels.replaceSummary(key, {
        ...range,
        text: PENDING_SUMMARY,
        tokens: spanTokens(tokenizer, { ...range, kind: 'summary', text: PENDING_SUMMARY }),
        jobId: `taken-back-${stamp}-${span.fromSeq}-${span.toSeq}`,
        replaces: span.jobId,
      });
      if (outcome.kind === 'replaced') states.markStale(key, outcome.generation);
    }
    return spans.length;
  }

  /**
   * Queues the `spans` active summaries holding `ranges` to be written again, or, with none, a pass
   * that only waits out the compaction passes in flight over them; returns `spans`.
   */
  async #queue(
    key: string,
    ranges: readonly SeqRange[],
    spans: number,
    afterPasses?: AfterPasses,
  ): Promise<number> {
    // Written from the archive as it now stands: tombstones, or the edited text.
    const needed =
      spans > 0 ||
      (await this.#options.runs.recent(key, IN_FLIGHT_LOOKBACK)).some(
        (r) => (r.status === 'queued' || r.status === 'running') && overlapsAny(r, ranges),
      );
    if (needed) this.#options.passes.enqueue(key, ranges, afterPasses);
    return spans;
  }
}

/**
 * The archive over `seqs` and the turns right after them (`repliesTo` reads a message's reply from
 * it), merged, in seq order: a deletion's, and `ebb forget --speaker`'s.
 */
export async function readTurnsAfter(
  channels: Pick<ArchiveReader, 'readArchive'>,
  key: string,
  seqs: readonly number[],
): Promise<StoredMessage[]> {
  const bySeq = new Map<number, StoredMessage>();
  for (const r of seqRanges(seqs)) {
    for (const m of await channels.readArchive(key, r.fromSeq, r.toSeq + REPLY_LOOKAHEAD))
      bySeq.set(m.seq, m);
  }
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}
