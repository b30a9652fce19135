/**
 * Spans recorded in this process by the real OpenTelemetry SDK, for a unit test of code that starts
 * spans: `recordSpans()` registers a tracer provider, the async-hooks context manager and the W3C
 * propagator globally (as `startTracing` does), and keeps every span that ends. `stop()` puts the
 * API back to its no-ops. For spans that cross processes, use `FakeOtlpCollector` (`./otlp`).
 *
 *   const spans = recordSpans();
 *   afterAll(() => spans.stop());
 *   … expect(spans.ended.map((s) => s.name)).toEqual(['ebb compaction pass']);
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { type ReadableSpan, TracerProvider } from '@opentelemetry/sdk-trace';

export type { ReadableSpan };

export interface SpanRecorder {
  /** The spans ended so far, in the order they ended. */
  readonly ended: readonly ReadableSpan[];
  /** Forgets the spans ended so far. */
  clear(): void;
  /** Unregisters the provider, the context manager and the propagator. */
  stop(): void;
}

export function recordSpans(): SpanRecorder {
  const ended: ReadableSpan[] = [];
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new TracerProvider({
      spanProcessors: [
        {
          onStart: () => {},
          onEnd: (span) => ended.push(span),
          forceFlush: async () => {},
          shutdown: async () => {},
        },
      ],
    }),
  );
  return {
    ended,
    clear: () => {
      ended.length = 0;
    },
    stop: () => {
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
