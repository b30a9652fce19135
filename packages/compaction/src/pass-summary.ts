/**
 * A pass's summary and memories (steps of `compaction-processor.ts`, no lock held): the channel's
 * summarizer writes the summary of the snapshot, its proposed memories are checked
 * (`validateMemories`, one `compaction.memories_invalid` event per check that changed anything,
 * counts by reason, never the text), the output is checkpointed on the run, and the memories are
 * upserted in the channel's scope.
 */
import {
  countOf,
  type ExtractedMemory,
  type MemoryUpsertResult,
  memoryScope,
  passCanWait,
  type SummaryOutput,
  type Tokenizer,
  validateMemories,
} from '@ebb/core';
import type { ChannelPassSettings, Pass, Processor, ProcessorJob } from './pass-context.js';
import type { Snapshot } from './pass-snapshot.js';

export type MemoryCheck = (proposed: SummaryOutput['memories']) => Promise<ExtractedMemory[]>;

/**
 * Memories are checked before the checkpoint holds them, and again when one is reused (a checkpoint
 * written before this check existed); a valid memory passes unchanged. The range's authors are read
 * once per pass, on the first check that has memories to check.
 */
export function memoryCheck(p: Processor, pass: Pass, tokenizer: Tokenizer): MemoryCheck {
  const { job } = pass;
  let authors: Promise<string[]> | undefined;
  return async (proposed) => {
    if (proposed.length === 0) return [];
    authors ??= p.channels.readAuthors(job.channelKey, job.fromSeq, job.toSeq);
    const result = validateMemories(proposed, {
      fromSeq: job.fromSeq,
      toSeq: job.toSeq,
      authors: await authors,
      tokenizer,
    });
    if (countOf(result.rejected) + countOf(result.repaired) > 0) {
      p.emit({
        event: 'compaction.memories_invalid',
        ...pass.event,
        memoriesRejected: result.rejected,
        memoriesRepaired: result.repaired,
      });
    }
    return result.memories;
  };
}

export interface SummaryInput {
  readonly settings: ChannelPassSettings;
  readonly snapshot: Extract<Snapshot, { kind: 'ok' }>;
  readonly signal: AbortSignal | undefined;
  /** The take-back mark the snapshot was read at: stamped on the checkpoint. */
  readonly mark: number;
  readonly beforeCall: () => Promise<void>;
}

/**
 * Asks the channel's summarizer and checkpoints its output with the memories checked: the first
 * worker to save its output wins and every worker on this job continues with that one.
 */
export async function summarize(
  p: Processor,
  pass: Pass,
  { settings, snapshot, signal, mark, beforeCall }: SummaryInput,
  checked: MemoryCheck,
): Promise<SummaryOutput> {
  const { job } = pass;
  const proposed = await settings.summarizer.summarize(
    {
      channelKey: job.channelKey,
      fromSeq: job.fromSeq,
      toSeq: job.toSeq,
      earlierSummaries: snapshot.earlierSummaries,
      messages: snapshot.messages,
      maxTokens: settings.summaryMaxTokens,
      canWait: passCanWait(job),
      ...(job.focus === undefined ? {} : { focus: job.focus }),
      beforeCall,
    },
    signal,
  );
  return p.runs.saveOutput(job.jobId, {
    ...proposed,
    memories: await checked(proposed.memories),
    takeBackMark: mark,
  });
}

export async function storeMemories(
  p: Processor,
  job: ProcessorJob,
  settings: ChannelPassSettings,
  memories: readonly ExtractedMemory[],
): Promise<MemoryUpsertResult> {
  const scope = memoryScope(job.channelKey, settings.memoryScope);
  return p.memories.upsert(memories.map((m) => ({ ...m, scope, channelKey: job.channelKey })));
}
