import { SpanStatusCode } from '@opentelemetry/api';
import { type ReadableSpan, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { libraryErrorScrubber } from './library-error-scrubber.js';

/** A provider with the scrubber in front of a processor that keeps what ends, as `startOtlpTracing` orders them. */
function provider(): { provider: TracerProvider; ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  const keep = {
    onStart() {},
    onEnd: (s: ReadableSpan) => ended.push(s),
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  return { provider: new TracerProvider({ spanProcessors: [libraryErrorScrubber(), keep] }), ended };
}

const PG_MESSAGE = 'invalid input syntax for type bigint: "zqz secret value"';

describe('libraryErrorScrubber', () => {
  it("drops an instrumentation's error message and exception text, keeping the type", () => {
    const { provider: p, ended } = provider();
    const span = p.getTracer('@opentelemetry/instrumentation-pg', '0.76.0').startSpan('pg.query:SELECT test');
    span.recordException(Object.assign(new Error(PG_MESSAGE), { code: '22P02' }));
    span.setStatus({ code: SpanStatusCode.ERROR, message: PG_MESSAGE });
    span.end();
    expect(ended[0]?.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(ended[0]?.events.map((e) => [e.name, e.attributes])).toEqual([
      ['exception', { 'exception.type': '22P02' }],
    ]);
    expect(JSON.stringify(ended[0]?.events)).not.toContain('zqz');
  });

  it('keeps a status that is a code, and leaves Ebb’s own spans as they are', () => {
    const { provider: p, ended } = provider();
    const library = p.getTracer('@opentelemetry/instrumentation-ioredis').startSpan('evalsha');
    library.setStatus({ code: SpanStatusCode.ERROR, message: 'ECONNRESET' });
    library.end();
    const own = p.getTracer('@ebb/observability').startSpan('ebb turn');
    own.setStatus({ code: SpanStatusCode.ERROR, message: 'turn_failed' });
    own.recordException(new Error('kept as the span says'));
    own.end();
    expect(ended.map((s) => s.status)).toEqual([
      { code: SpanStatusCode.ERROR, message: 'ECONNRESET' },
      { code: SpanStatusCode.ERROR, message: 'turn_failed' },
    ]);
    expect(ended[1]?.events[0]?.attributes?.['exception.message']).toBe('kept as the span says');
  });
});
