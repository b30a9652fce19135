/**
 * Forgetting in one channel's working context: what `ebb memories forget` does beyond deleting
 * memories. Given the seqs whose text must go (the forgotten speaker's messages, the messages that
 * hold a text, or the source messages of forgotten memories), in an order that a failure part-way
 * leaves re-runnable (whatever selects those seqs is changed last):
 *
 * 1. every active summary span holding any of those seqs is summarized again from the archive over
 *    its whole range without them and without any tombstone (a span folds the summaries before it,
 *    so its own text is no source), by the channel's own summarizer (no call when nothing is left:
 *    the span says `REDACTED_SUMMARY`), and put in place with `replaceSummary`; the memories
 *    that summary call proposes are dropped, never stored. A span a pass replaced meanwhile is
 *    planned again, a few times at most; what is still left is reported as `unresolved`;
 * 2. checkpoints over those seqs are cleared;
 * 3. retired spans over those seqs keep their range but lose their text;
 * 4. last, with `archive`, the archived messages become tombstones (`REDACTED_MESSAGE`, same seq,
 *    role and author), raw ones in the context with them.
 *
 * The generation goes up with every replaced span, so a running bot reloads the context on its next
 * turn.
 */
import {
  type ArchiveReader,
  type CheckpointEraser,
  type Forgetting,
  overlapsAny,
  REDACTED_MESSAGE,
  REDACTED_SUMMARY,
  RUNS_LOOKBACK,
  type RunStore,
  type SeqRange,
  type StoredMessage,
  spansToResummarize,
  spanTokens,
  summarizedMessage,
  tombstone,
} from '@ebb/core';
import type { ChannelPassSettings } from './compaction-processor.js';

export interface ChannelRedaction {
  readonly channelKey: string;
  /** The seqs whose text must leave the working context and the checkpoints. */
  readonly ranges: readonly SeqRange[];
  /** Also overwrite those messages in the archive (`--archive`). */
  readonly archive: boolean;
  /**
   * The archive already holds what a summarizer may read of those seqs (a deletion's tombstones, an
   * edit's new text): the summaries are written from it as it stands, not with the seqs tombstoned.
   */
  readonly asArchived?: boolean;
  /**
   * Write each span from the longest whole retired summary before the first redacted seq it holds
   * (`Forgetting.summaryBefore`) and the archive after it, as the pass that made it did, rather
   * than from its whole range: a deletion of a recent message costs one pass, not the channel's
   * history. Without such a summary (or without this), from the whole range.
   */
  readonly fromEarlier?: boolean;
}

export interface RedactChannelOptions {
  readonly channels: ArchiveReader & Forgetting;
  /** Passes in flight over the ranges (`recent`), and the checkpoints over them to clear. */
  readonly runs: Pick<RunStore, 'recent'> & Pick<CheckpointEraser, 'clearCheckpoints'>;
  readonly settingsFor: (channelKey: string) => Promise<ChannelPassSettings>;
  /** Tests: the clock the re-summarized spans' job ids are stamped with. */
  readonly now?: () => number;
}

export interface RedactionPreview {
  readonly channelKey: string;
  /** Active summary spans that would be summarized again. */
  readonly spans: readonly SeqRange[];
  /** Archived messages in the ranges (what `--archive` would overwrite). */
  readonly messages: number;
}

export interface RedactionReport extends RedactionPreview {
  /** Runs whose checkpoint was cleared. */
  readonly checkpoints: number;
  readonly retiredSpans: number;
  /** Archived messages overwritten (0 without `archive`). */
  readonly archived: number;
  /** Passes of the channel over those seqs still queued or running: one may have read the text before. */
  readonly inFlight: number;
  /**
   * Active summary spans that still hold a redacted seq: passes kept replacing them for
   * `MAX_REDACTION_ROUNDS` rounds. Run the command again once they are done.
   */
  readonly unresolved: readonly SeqRange[];
}

/** How often a span a pass replaced meanwhile is planned again before it is reported unresolved. */
const MAX_REDACTION_ROUNDS = 5;

/** What `redactChannel` would do, changing nothing (the dry run). */
export async function previewRedaction(
  channels: Pick<ArchiveReader, 'loadPrefix'>,
  redaction: Pick<ChannelRedaction, 'channelKey' | 'ranges'>,
): Promise<RedactionPreview> {
  const prefix = await channels.loadPrefix(redaction.channelKey);
  return {
    channelKey: redaction.channelKey,
    spans: spansToResummarize(prefix, redaction.ranges).map(rangeOf),
    messages: archivedIn(redaction.ranges, prefix.headSeq),
  };
}

export async function redactChannel(
  options: RedactChannelOptions,
  redaction: ChannelRedaction,
): Promise<RedactionReport> {
  const { channels, runs } = options;
  const { channelKey, ranges } = redaction;
  const settings = await options.settingsFor(channelKey);

  // 1. The summaries, from the archive with the seqs redacted.
  const forgetId = `forget-${(options.now ?? Date.now)()}`;
  const written = new Set<string>();
  const rebuilt: SeqRange[] = [];
  let left: SeqRange[] = [];
  for (let round = 0; round <= MAX_REDACTION_ROUNDS; round++) {
    const todo = spansToResummarize(await channels.loadPrefix(channelKey), ranges).filter(
      (s) => !written.has(s.jobId),
    );
    left = todo.map(rangeOf);
    if (todo.length === 0 || round === MAX_REDACTION_ROUNDS) break;
    for (const span of todo) {
      const earlier = redaction.fromEarlier
        ? await channels.summaryBefore(channelKey, span.fromSeq, firstIn(span, ranges))
        : undefined;
      const from = earlier === undefined ? span.fromSeq : earlier.toSeq + 1;
      const messages = await whatIsLeft(channels, redaction, from, span.toSeq);
      const earlierSummaries = earlier === undefined ? [] : [earlier.text];
      // Nothing of the range is left to say (a retention sweep's whole span): no model call.
      const text =
        messages.length === 0 && earlierSummaries.length === 0
          ? REDACTED_SUMMARY
          : (
              await settings.summarizer.summarize({
                channelKey,
                fromSeq: span.fromSeq,
                toSeq: span.toSeq,
                earlierSummaries,
                messages,
                maxTokens: settings.summaryMaxTokens,
              })
            ).text;
      // The summarizer's memories are dropped: forgetting never learns anything new.
      const jobId = `${forgetId}-${span.fromSeq}-${span.toSeq}`;
      const tokens = spanTokens(settings.tokenizer, { ...rangeOf(span), kind: 'summary', text });
      const outcome = await channels.replaceSummary(channelKey, {
        ...rangeOf(span),
        text,
        tokens,
        jobId,
        replaces: span.jobId,
      });
      if (outcome.kind === 'replaced') {
        written.add(jobId);
        rebuilt.push(rangeOf(span));
      }
    }
  }

  // 2, 3. What a retry or an audit could still read.
  const checkpoints = await runs.clearCheckpoints(channelKey, ranges);
  const retiredSpans = await channels.redactRetiredSpans(channelKey, ranges);

  // 4. Last: the archive is what found these seqs, so a failure before here can be run again.
  const headSeq = (await channels.loadPrefix(channelKey)).headSeq;
  let archived = 0;
  if (redaction.archive) {
    const tombstones = [];
    for (const r of ranges) {
      const found = await channels.readArchive(channelKey, r.fromSeq, r.toSeq);
      tombstones.push(...found.map((m) => tombstone(m, settings.tokenizer)));
    }
    // Recorded as a take-back with the tombstones: a pass that read these seqs before cannot land them.
    const takeBack = { kind: 'forget', ranges, platformMessageIds: [] } as const;
    if (tombstones.length > 0)
      archived = (await channels.redactArchive(channelKey, tombstones, takeBack)).redacted;
  }

  const inFlight = (await runs.recent(channelKey, RUNS_LOOKBACK)).filter(
    (r) => (r.status === 'queued' || r.status === 'running') && overlapsAny(r, ranges),
  ).length;
  return {
    channelKey,
    spans: rebuilt,
    messages: archivedIn(ranges, headSeq),
    archived,
    checkpoints,
    retiredSpans,
    inFlight,
    unresolved: left,
  };
}

/** Seqs read per query when a span is written again: a page's rows are let go before the next. */
const REWRITE_PAGE = 5_000;

/**
 * What a summary of `fromSeq..toSeq` may be written from: the archived messages without the
 * redaction's seqs (unless the archive already holds what may be read of them: `asArchived`) and
 * without any tombstone, read a page at a time. A tombstone says nothing a summary should repeat,
 * and a retention sweep leaves most of a long span tombstones: a million-message span held 925,000
 * of them, and read whole (845 MB of the worker's memory) only for the summarizer to skip them.
 */
async function whatIsLeft(
  channels: ArchiveReader,
  redaction: ChannelRedaction,
  fromSeq: number,
  toSeq: number,
): Promise<StoredMessage[]> {
  const left: StoredMessage[] = [];
  for (let from = fromSeq; from <= toSeq; from += REWRITE_PAGE) {
    for (const m of await channels.readArchive(
      redaction.channelKey,
      from,
      Math.min(toSeq, from + REWRITE_PAGE - 1),
    )) {
      const redacted =
        !redaction.asArchived && overlapsAny({ fromSeq: m.seq, toSeq: m.seq }, redaction.ranges);
      if (!redacted && m.text !== REDACTED_MESSAGE) left.push(summarizedMessage(m));
    }
  }
  return left;
}

/** Archived messages the ranges cover: the archive holds every seq from 1 to the head. */
function archivedIn(ranges: readonly SeqRange[], headSeq: number): number {
  return ranges.reduce((n, r) => n + Math.max(0, Math.min(r.toSeq, headSeq) - r.fromSeq + 1), 0);
}

/** The first redacted seq inside `span` (the span overlaps `ranges`). */
function firstIn(span: SeqRange, ranges: readonly SeqRange[]): number {
  return Math.min(
    ...ranges.filter((r) => overlapsAny(span, [r])).map((r) => Math.max(r.fromSeq, span.fromSeq)),
  );
}

function rangeOf(span: SeqRange): SeqRange {
  return { fromSeq: span.fromSeq, toSeq: span.toSeq };
}
