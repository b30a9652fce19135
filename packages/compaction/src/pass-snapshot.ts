/**
 * A pass's first read (a step of `compaction-processor.ts`): the snapshot of its range that
 * `planSnapshot` describes, with the archive parts read from the store. A snapshot gone stale (a
 * wider summary landed first, the range ends past head) ends the run before any LLM call.
 */
import { type ArchiveReader, planSnapshot, type StoredMessage, summarizedMessage } from '@ebb/core';
import type { Pass, Processor, ProcessorJob, ProcessResult } from './pass-context.js';

export type Snapshot =
  | { kind: 'ok'; earlierSummaries: string[]; messages: StoredMessage[] }
  | { kind: 'stale'; reason: string };

/** What a pass resuming from its checkpoint reads: nothing (the splice checks again what a snapshot would). */
export const EMPTY_SNAPSHOT = { kind: 'ok', earlierSummaries: [], messages: [] } as const satisfies Snapshot;

/** The snapshot `planSnapshot` describes, with the archive parts read from the store. */
export async function snapshotRange(channels: ArchiveReader, job: ProcessorJob): Promise<Snapshot> {
  const plan = planSnapshot(await channels.loadPrefix(job.channelKey), job);
  if (plan.kind === 'stale') return plan;
  const earlierSummaries: string[] = [];
  const messages: StoredMessage[] = [];
  for (const part of plan.parts) {
    if (part.kind === 'summary') earlierSummaries.push(part.text);
    else {
      // A stubbed tool result is summarized as its stub: microcompaction already judged it.
      const archived = await channels.readArchive(job.channelKey, part.fromSeq, part.toSeq);
      for (const message of archived) messages.push(summarizedMessage(message));
    }
  }
  return { kind: 'ok', earlierSummaries, messages };
}

export async function finishStaleSnapshot(
  p: Processor,
  pass: Pass,
  snapshot: Extract<Snapshot, { kind: 'stale' }>,
): Promise<ProcessResult> {
  await p.runs.finish(pass.job.jobId, {
    status: 'stale',
    error: snapshot.reason,
    durationMs: p.now() - pass.started,
  });
  p.emit({ event: 'compaction.stale', ...pass.event, reason: snapshot.reason });
  return snapshot;
}
