/**
 * Forgetting in one channel's working context: what `ebb memories forget` does beyond deleting
 * memories. Given the seqs whose text must go (the forgotten speaker's messages, or the source
 * messages of forgotten memories):
 *
 * 1. with `archive`, the archived messages become tombstones (`REDACTED_MESSAGE`, same seq, role and
 *    author), raw ones in the context with them;
 * 2. every active summary span holding any of those seqs is summarized again from the archive over
 *    its whole range with them redacted (a span folds the summaries before it, so its own text is no
 *    source), by the channel's own summarizer, and put in place with `replaceSummary`; the memories
 *    that summary call proposes are dropped, never stored. A span a pass replaced meanwhile is
 *    planned again, a few times at most;
 * 3. checkpoints over those seqs are cleared, and forgotten memories taken out of any other;
 * 4. retired spans over those seqs keep their range but lose their text.
 *
 * The generation goes up with every replaced span, so a running bot reloads the context on its next
 * turn (and at once when a notifier is given).
 */
import {
  type ChannelStore,
  type ContextNotifier,
  type RunStore,
  redactMessages,
  type SeqRange,
  spansToResummarize,
  spanTokens,
  tombstone,
} from '@ebb/core';
import type { ChannelPassSettings } from './compaction-processor.js';

export interface ChannelRedaction {
  readonly channelKey: string;
  /** The seqs whose text must leave the working context and the checkpoints. */
  readonly ranges: readonly SeqRange[];
  /** Also overwrite those messages in the archive (`--archive`). */
  readonly archive: boolean;
  /** Texts of the forgotten memories, taken out of every checkpoint that holds them. */
  readonly memoryTexts: readonly string[];
}

export interface RedactChannelOptions {
  readonly channels: ChannelStore;
  readonly runs: RunStore;
  readonly settingsFor: (channelKey: string) => Promise<ChannelPassSettings>;
  readonly notifier?: ContextNotifier;
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
  /** Runs whose checkpoint was cleared or pruned. */
  readonly checkpoints: number;
  readonly retiredSpans: number;
  /** Archived messages overwritten (0 without `archive`). */
  readonly archived: number;
  /** Passes of the channel over those seqs still queued or running: one may have read the text before. */
  readonly inFlight: number;
}

/** How often a span a pass replaced meanwhile is planned again before giving up on it. */
export const MAX_REDACTION_ROUNDS = 5;

/** What `redactChannel` would do, changing nothing (the dry run). */
export async function previewRedaction(
  channels: ChannelStore,
  redaction: Pick<ChannelRedaction, 'channelKey' | 'ranges'>,
): Promise<RedactionPreview> {
  const spans = spansToResummarize(await channels.loadPrefix(redaction.channelKey), redaction.ranges);
  let messages = 0;
  for (const r of redaction.ranges) {
    messages += (await channels.readArchive(redaction.channelKey, r.fromSeq, r.toSeq)).length;
  }
  return { channelKey: redaction.channelKey, spans: spans.map(rangeOf), messages };
}

export async function redactChannel(
  options: RedactChannelOptions,
  redaction: ChannelRedaction,
): Promise<RedactionReport> {
  const { channels, runs } = options;
  const { channelKey, ranges } = redaction;
  const settings = await options.settingsFor(channelKey);
  const startGeneration = await channels.generation(channelKey);

  let messages = 0;
  let archived = 0;
  for (const r of ranges) {
    const found = await channels.readArchive(channelKey, r.fromSeq, r.toSeq);
    messages += found.length;
    if (redaction.archive && found.length > 0) {
      const outcome = await channels.redactArchive(
        channelKey,
        found.map((m) => tombstone(m, settings.tokenizer)),
      );
      archived += outcome.redacted;
    }
  }

  const forgetId = `forget-${(options.now ?? Date.now)()}`;
  const written = new Set<string>();
  const rebuilt: SeqRange[] = [];
  for (let round = 0; round < MAX_REDACTION_ROUNDS; round++) {
    const todo = spansToResummarize(await channels.loadPrefix(channelKey), ranges).filter(
      (s) => !written.has(s.jobId),
    );
    if (todo.length === 0) break;
    for (const span of todo) {
      const archive = await channels.readArchive(channelKey, span.fromSeq, span.toSeq);
      const output = await settings.summarizer.summarize({
        channelKey,
        fromSeq: span.fromSeq,
        toSeq: span.toSeq,
        earlierSummaries: [],
        messages: redactMessages(archive, ranges, settings.tokenizer),
        maxTokens: settings.summaryMaxTokens,
      });
      // output.memories are dropped: forgetting never learns anything new.
      const jobId = `${forgetId}-${span.fromSeq}-${span.toSeq}`;
      const tokens = spanTokens(settings.tokenizer, { ...rangeOf(span), kind: 'summary', text: output.text });
      const outcome = await channels.replaceSummary(channelKey, {
        ...rangeOf(span),
        text: output.text,
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

  const checkpoints = await runs.forgetCheckpoints({
    channelKey,
    ranges,
    memoryTexts: redaction.memoryTexts,
  });
  const retiredSpans = await channels.redactRetiredSpans(channelKey, ranges);
  const inFlight = (await runs.recent(channelKey, IN_FLIGHT_LOOKBACK)).filter(
    (r) =>
      (r.status === 'queued' || r.status === 'running') &&
      ranges.some((x) => x.fromSeq <= r.toSeq && r.fromSeq <= x.toSeq),
  ).length;
  const generation = await channels.generation(channelKey);
  if (options.notifier && generation !== startGeneration) {
    await options.notifier.publish({ channelKey, generation });
  }
  return { channelKey, spans: rebuilt, messages, archived, checkpoints, retiredSpans, inFlight };
}

/** How many recent runs are looked through for passes still in flight. */
const IN_FLIGHT_LOOKBACK = 50;

function rangeOf(span: SeqRange): SeqRange {
  return { fromSeq: span.fromSeq, toSeq: span.toSeq };
}
