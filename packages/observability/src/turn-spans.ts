/**
 * The span of one bot turn (`ebb turn`): the root of the turn's trace (or, for a message posted to the
 * web API, the child of that request's span), the parent of its model calls
 * (`traced-models.ts`) and, through the trace context the queue carries in the job, of the
 * compaction pass it queued, in whatever worker runs it. Its attributes name the channel only as the
 * hash the provider's prompt cache is keyed by (`promptCacheKey`), never the key itself, and say how
 * the turn ended. With tracing off the span is the API's no-op.
 */
import { promptCacheKey } from '@ebb/llm';
import { type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { EBB_TRACER_NAME } from './traced-models.js';
import { EBB_VERSION } from './version.js';

export const TURN_ATTRIBUTES = {
  /** `promptCacheKey(channelKey)`: the same hash the provider sees, so a turn's trace and its prompts line up. */
  channel: 'ebb.channel.hash',
  platform: 'ebb.platform',
  /** What became of the message: `stored`, `duplicate`, `spooled`, `failed`, `refused`. */
  archived: 'ebb.turn.archived',
  answered: 'ebb.turn.answered',
} as const;

export interface TurnOutcome {
  readonly archived: string;
  readonly answered: boolean;
  /** The turn failed after the message was kept (no reply made or kept). */
  readonly failed?: boolean;
}

/** Runs `turn` inside its span, which ends with the outcome the turn returns (`outcomeOf`). */
export function traceTurn<T>(
  message: { readonly channelKey: string; readonly platform: string },
  outcomeOf: (result: T) => TurnOutcome,
  turn: () => Promise<T>,
): Promise<T> {
  const tracer = trace.getTracer(EBB_TRACER_NAME, EBB_VERSION);
  // The entry of the trace when the message came from a gateway or a socket (Slack, Discord); under
  // the span of the HTTP request that brought it (the web API), a step of that request.
  const kind = trace.getActiveSpan() === undefined ? SpanKind.SERVER : SpanKind.INTERNAL;
  return tracer.startActiveSpan('ebb turn', { kind }, async (span: Span) => {
    if (span.isRecording())
      span.setAttributes({
        [TURN_ATTRIBUTES.channel]: promptCacheKey(message.channelKey),
        [TURN_ATTRIBUTES.platform]: message.platform,
      });
    try {
      const result = await turn();
      const outcome = outcomeOf(result);
      span.setAttributes({
        [TURN_ATTRIBUTES.archived]: outcome.archived,
        [TURN_ATTRIBUTES.answered]: outcome.answered,
      });
      if (outcome.failed) span.setStatus({ code: SpanStatusCode.ERROR, message: 'turn_failed' });
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'turn_threw' });
      throw err;
    } finally {
      span.end();
    }
  });
}
