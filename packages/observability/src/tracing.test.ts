/**
 * Tracing costs nothing unless asked for: with no endpoint set, `startTracing` loads no module of
 * the SDK (seen in the module cache, where Node keeps every CommonJS module loaded, the SDK's
 * included) and spans are the API's no-ops. The second case is the check's control: the same look
 * at the cache sees the SDK once an endpoint is set. The tests run in this order, in one process.
 */
import { createRequire } from 'node:module';
import { FakeOtlpCollector } from '@ebb/testing/otlp';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing } from './tracing.js';

const SDK =
  /[\\/]node_modules[\\/]@opentelemetry[\\/](sdk-trace|exporter-trace-otlp-proto|context-async-hooks)[\\/]/;
const moduleCache = createRequire(import.meta.url).cache;
const sdkModules = () => Object.keys(moduleCache).filter((path) => SDK.test(path));

let collector: FakeOtlpCollector;
beforeAll(async () => {
  collector = await FakeOtlpCollector.start();
});
afterAll(() => collector.close());

describe('startTracing', () => {
  it('with no endpoint set loads nothing of the SDK, and every span is a non-recording no-op', async () => {
    expect(sdkModules()).toEqual([]);
    const log = new RecordingLogger();
    const tracing = await startTracing({ OTEL_SERVICE_NAME: 'ebb', OTEL_TRACES_SAMPLER: 'always_on' }, log);
    const span = trace.getTracer('test').startSpan('turn');
    expect(span.isRecording()).toBe(false);
    expect(isSpanContextValid(span.spanContext())).toBe(false);
    span.end();
    await tracing.shutdown();
    expect(sdkModules()).toEqual([]);
    expect(log.entries).toEqual([]);
  });

  it('with an endpoint loads the SDK and records spans, until shut down', async () => {
    const log = new RecordingLogger();
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, log, {
      serviceName: 'ebb-worker',
    });
    expect(sdkModules()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/sdk-trace/),
        expect.stringMatching(/exporter-trace-otlp-proto/),
        expect.stringMatching(/context-async-hooks/),
      ]),
    );
    expect(log.events('tracing.started')).toMatchObject([
      {
        level: 'info',
        fields: {
          endpoint: collector.tracesUrl,
          serviceName: 'ebb-worker',
          sampler: 'parentbased_always_on',
        },
      },
    ]);
    const span = trace.getTracer('test').startSpan('pass');
    expect(span.isRecording()).toBe(true);
    span.end();
    await tracing.shutdown();
    // Shutting down sent what was buffered, and put the API back to its no-ops.
    expect(collector.spans).toMatchObject([
      { name: 'pass', spanId: span.spanContext().spanId, resource: { 'service.name': 'ebb-worker' } },
    ]);
    expect(trace.getTracer('test').startSpan('after').isRecording()).toBe(false);
  });

  it('says which settings it did not follow', async () => {
    const log = new RecordingLogger();
    const tracing = await startTracing(
      { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_TRACES_SAMPLER: 'xray' },
      log,
    );
    await tracing.shutdown();
    expect(log.events('tracing.setting_ignored')).toMatchObject([
      { level: 'warn', fields: { variable: 'OTEL_TRACES_SAMPLER' } },
    ]);
  });

  it('keeps going when the collector is not there, and its stop ends at its bound, saying so', async () => {
    // A port nothing listens on any more.
    const gone = await FakeOtlpCollector.start();
    const url = gone.url;
    await gone.close();
    const log = new RecordingLogger();
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: url }, log);
    trace.getTracer('test').startSpan('turn').end();
    // The exporter retries a refused connection past the stop's bound: the stop ends at the bound
    // and says the last spans were dropped.
    await tracing.shutdown();
    expect(log.events('tracing.shutdown_timed_out')).toMatchObject([
      { level: 'warn', fields: { ms: 5_000 } },
    ]);
    expect(trace.getTracer('test').startSpan('after').isRecording()).toBe(false);
  }, 20_000);
});
