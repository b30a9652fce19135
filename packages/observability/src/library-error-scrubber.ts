/**
 * Keeps the maintained instrumentations' errors to their codes, as Ebb's own spans are: a failed
 * Postgres query's span status carries the server's message (`invalid input syntax for type bigint:
 * "…"` quotes the value), and a failed Redis command records its exception with message and stack.
 * A span processor that runs before the export one, while the span can still be changed
 * (`onEnding`): for a span of an `@opentelemetry/instrumentation-*` scope, a status message that is
 * not a code (`db_unavailable`, `57P01`) is dropped, and an exception event keeps its type alone.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';

const LIBRARY_SCOPE = '@opentelemetry/instrumentation-';
/** A code, not a sentence: letters, digits, `_`, `.`, `-`. */
const CODE = /^[A-Za-z0-9_.-]{1,64}$/;
const KEPT_EXCEPTION_ATTRIBUTES = new Set(['exception.type']);

export function libraryErrorScrubber(): SpanProcessor {
  return {
    onStart: () => {},
    onEnding: (span: Span) => {
      if (!span.instrumentationScope.name.startsWith(LIBRARY_SCOPE)) return;
      const { message } = span.status;
      if (span.status.code === SpanStatusCode.ERROR && message !== undefined && !CODE.test(message)) {
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      for (const event of span.events) {
        if (event.name !== 'exception' || event.attributes === undefined) continue;
        const kept = Object.entries(event.attributes).filter(([key]) => KEPT_EXCEPTION_ATTRIBUTES.has(key));
        (event as { attributes: unknown }).attributes = Object.fromEntries(kept);
      }
    },
    onEnd: (_span: ReadableSpan) => {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
}
