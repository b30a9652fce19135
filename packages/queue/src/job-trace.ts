/**
 * A compaction job's place in a trace: the enqueuer writes the active trace context into the job
 * (`traceOfEnqueue`, W3C `traceparent` and `tracestate`, by whatever propagator the process
 * registered), and the worker (or the embedded queue) runs the pass in a CONSUMER span under it
 * (`inPassSpan`), whose
 * attributes say how long the job waited in the queue. With tracing off the propagator writes
 * nothing and the span is the API's no-op, so a job carries no `trace` field.
 */

import { createHash } from 'node:crypto';
import { errorCodeOf } from '@ebb/core';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { CompactionJobPayload } from './compaction-jobs.js';

const TRACER_NAME = '@ebb/queue';

export const PASS_ATTRIBUTES = {
  /** The channel as the turn's span names it (`promptCacheKey`'s hash), never the key. */
  channel: 'ebb.channel.hash',
  tier: 'ebb.compaction.tier',
  /** The job's id with its channel key hashed: `<channel hash>.<tier>.g<generation>.s<from>-<to>`. */
  jobId: 'messaging.message.id',
  /** `bullmq`; absent for a pass of the embedded queue, which runs in the process that queued it. */
  system: 'messaging.system',
  attempt: 'ebb.compaction.attempt',
  /** From the job's creation to this attempt's start (its delay, a backoff or a deferral included). */
  queueWaitMs: 'ebb.compaction.queue_wait_ms',
} as const;

/** The trace context to carry in a job enqueued now; undefined when there is none to carry. */
export function traceOfEnqueue(): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return Object.keys(carrier).length === 0 ? undefined : carrier;
}

/** Runs one attempt of a pass in its span, the child of the turn that queued it when the job says which. */
export function inPassSpan<T>(
  payload: CompactionJobPayload,
  job: {
    readonly attempt: number;
    readonly createdAt: number;
    readonly startedAt: number;
    /** The queue it came through (`bullmq`); none for the embedded queue's. */
    readonly system?: string;
  },
  run: () => Promise<T>,
): Promise<T> {
  const parent =
    payload.trace === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, payload.trace);
  const channel = channelHash(payload.channelKey);
  const attributes = {
    ...(job.system === undefined ? {} : { [PASS_ATTRIBUTES.system]: job.system }),
    [PASS_ATTRIBUTES.channel]: channel,
    [PASS_ATTRIBUTES.tier]: payload.tier,
    // `compactionJobId` but for the key, which a span never holds.
    [PASS_ATTRIBUTES.jobId]: `${channel}.${payload.tier}.g${payload.generation}.s${payload.fromSeq}-${payload.toSeq}`,
    [PASS_ATTRIBUTES.attempt]: job.attempt,
    [PASS_ATTRIBUTES.queueWaitMs]: Math.max(0, job.startedAt - job.createdAt),
  };
  return trace
    .getTracer(TRACER_NAME)
    .startActiveSpan(
      'ebb compaction pass',
      { kind: SpanKind.CONSUMER, attributes },
      parent,
      async (span: Span) => {
        try {
          return await run();
        } catch (err) {
          // Its code, never its message (which may quote what it summarized).
          span.setStatus({ code: SpanStatusCode.ERROR, message: errorCodeOf(err) });
          throw err;
        } finally {
          span.end();
        }
      },
    );
}

/**
 * The hash `@ebb/llm`'s `promptCacheKey` gives a channel (the turn's `ebb.channel.hash`), so a pass
 * lines up with its channel's turns; the queue does not depend on the LLM package, and
 * `turn-spans.test.ts` keeps the two the same.
 */
function channelHash(channelKey: string): string {
  return `ebb-${createHash('sha256').update(channelKey).digest('hex').slice(0, 24)}`;
}
