/**
 * How `ChannelCompactor` puts a pass on the queue: the job is enqueued, its run is recorded, a job it
 * escalated is marked skipped, and one event says which of these happened. A queue or run store that
 * is down drops the pass (the monitor asks again next turn) instead of failing the turn.
 */

import type { CompactionPlan } from '../plans/plan-compaction.js';
import type { RunStore } from '../ports/ports.js';
import type { CompactionQueue } from '../ports/queue-ports.js';
import type { CompactionEventSink, CompactionLogEvent } from './compaction-events.js';

export interface EnqueuePassOptions {
  readonly queue: CompactionQueue;
  readonly runs: Pick<RunStore, 'create' | 'finish'>;
  readonly emit: CompactionEventSink;
}

export interface PassRequest {
  readonly usage: number;
  readonly delayMs?: number;
  readonly after?: string;
  readonly focus?: string;
}

export interface EnqueuedPass {
  readonly jobId: string;
  readonly deduplicated: boolean;
}

/** The pass's job id (and whether a pass in flight took its place); undefined when the queue is away. */
export async function enqueuePass(
  options: EnqueuePassOptions,
  channelKey: string,
  plan: CompactionPlan,
  request: PassRequest,
): Promise<EnqueuedPass | undefined> {
  try {
    return await enqueueOrThrow(options, channelKey, plan, request);
  } catch (err) {
    // The queue or the run store is down: the pass is dropped, and the monitor asks again next turn.
    options.emit({
      event: 'compaction.skipped',
      channel: channelKey,
      tier: plan.tier,
      usage: request.usage,
      reason: 'queue_unavailable',
      error: err instanceof Error && 'code' in err ? String(err.code) : 'queue_error',
    });
    return undefined;
  }
}

async function enqueueOrThrow(
  options: EnqueuePassOptions,
  channelKey: string,
  plan: CompactionPlan,
  request: PassRequest,
): Promise<EnqueuedPass> {
  const { usage, delayMs = 0 } = request;
  const job = {
    channelKey,
    tier: plan.tier,
    fromSeq: plan.fromSeq,
    toSeq: plan.toSeq,
    generation: plan.generation,
    ...(request.focus === undefined ? {} : { focus: request.focus }),
    ...(request.after === undefined ? {} : { after: request.after }),
  };
  const outcome = await options.queue.enqueue(job, delayMs > 0 ? { delayMs } : {});
  // The worker may start the job before this row exists; it then creates the row itself, and this
  // insert is a no-op (runs are created once per job id).
  if (outcome.kind !== 'deduplicated') {
    await options.runs.create({
      jobId: outcome.jobId,
      channelKey,
      tier: plan.tier,
      usage,
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      generation: plan.generation,
      ...(request.focus === undefined ? {} : { focus: request.focus }),
      ...(request.after === undefined ? {} : { after: request.after }),
    });
  }
  if (outcome.kind === 'escalated') {
    // The replaced job was waiting: never started (`queued`), or between tries (`running`, a retry's
    // backoff, e.g. a background pass waiting for the LLM): either way it will not run again.
    // (A stalled job that had spliced before it stalled is recorded `skipped` too: a rare
    // bookkeeping slip, where leaving it `running` would leave it stuck.)
    await options.runs.finish(
      outcome.replacedJobId,
      { status: 'skipped', error: 'escalated' },
      { onlyFrom: ['queued', 'running'] },
    );
  }
  const event: CompactionLogEvent = {
    event: outcome.kind === 'deduplicated' ? 'compaction.skipped' : 'compaction.enqueued',
    channel: channelKey,
    tier: plan.tier,
    usage,
    fromSeq: plan.fromSeq,
    toSeq: plan.toSeq,
    jobId: outcome.jobId,
    ...(delayMs > 0 && outcome.kind !== 'deduplicated' ? { delayMs } : {}),
    ...(outcome.kind === 'deduplicated' ? { reason: 'in_flight' } : {}),
    ...(outcome.kind === 'escalated' ? { reason: `escalated ${outcome.replacedJobId}` } : {}),
    ...(outcome.kind === 'enqueued' && request.after ? { reason: `follows ${request.after}` } : {}),
  };
  options.emit(event);
  return { jobId: outcome.jobId, deduplicated: outcome.kind === 'deduplicated' };
}
