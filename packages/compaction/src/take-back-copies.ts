/**
 * The copies a take-back reaches that are traced by query rather than rewritten by a model: the
 * memories derived from its seqs (a memory's source range holds one) and what the runs' checkpoints
 * keep of them. Shared by the compaction pass (a take-back landed while it ran) and the take-back
 * runner (finishing one), so both drop exactly the same copies.
 */
import { type CheckpointEraser, type Memory, type MemoryStore, memoriesOver, type SeqRange } from '@ebb/core';

export interface DerivedCopiesOptions {
  readonly memories: Pick<MemoryStore, 'list' | 'forget'>;
  readonly runs: CheckpointEraser;
}

/**
 * Drops the channel's memories whose source range holds a seq of `ranges`, out of every checkpoint
 * too (a retried run would store them again). Returns the memories dropped: the bot's replies that
 * recalled one are derived from it.
 */
export async function dropDerivedMemories(
  options: DerivedCopiesOptions,
  channelKey: string,
  ranges: readonly SeqRange[],
): Promise<Memory[]> {
  if (ranges.length === 0) return [];
  const derived = memoriesOver(await options.memories.list({ channelKey }), ranges);
  if (derived.length === 0) return [];
  await options.runs.dropCheckpointMemories(derived.map((m) => m.text));
  await options.memories.forget(derived.map((m) => m.id));
  return derived;
}
