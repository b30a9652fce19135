/**
 * The OpenTelemetry SDK, started: the only module that imports it, and only `startTracing` imports
 * this one (dynamically, once the variables ask for tracing), so a process without tracing loads
 * none of it. Spans go in batches to the OTLP endpoint over HTTP as protobuf; the context follows
 * async calls (AsyncLocalStorage); trace context crosses processes as W3C `traceparent`.
 *
 * The API is global by OpenTelemetry's design: instrumented code asks `trace.getTracer()` and gets
 * this provider once it is registered. `shutdown` flushes what is buffered and unregisters it all,
 * so spans are no-ops again (and a test can start tracing anew).
 */
import { type Logger, settleWithin } from '@ebb/core';
import { context, type DiagLogger, DiagLogLevel, diag, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { libraryErrorScrubber } from './library-error-scrubber.js';
import type { SamplerPlan, TracingPlan } from './tracing-plan.js';
import { EBB_VERSION } from './version.js';

/** How long the last spans get to reach the collector at stop; a stop step that runs it allows more (`TRACING_STOP_STEP_MS`). */
const SHUTDOWN_MS = 5_000;

/** Registers the SDK; the handle is `startTracing`'s `Tracing`. */
export function startOtlpTracing(
  plan: Extract<TracingPlan, { kind: 'otlp' }>,
  logger: Logger,
): { shutdown(): Promise<void> } {
  diag.setLogger(diagLogger(logger), DiagLogLevel.WARN);
  const provider = new TracerProvider({
    resource: defaultResource().merge(
      resourceFromAttributes({ 'service.name': plan.serviceName, 'service.version': EBB_VERSION }),
    ),
    sampler: sampler(plan.sampler),
    // The scrubber first: it changes a span while it ends, before the batch takes it.
    spanProcessors: [
      libraryErrorScrubber(),
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: plan.tracesUrl }) }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    async shutdown() {
      const flushed = await settleWithin(provider.shutdown(), SHUTDOWN_MS);
      if (!flushed.done) {
        logger.warn(
          { event: 'tracing.shutdown_timed_out', ms: SHUTDOWN_MS },
          `the last spans did not reach ${plan.tracesUrl} within ${SHUTDOWN_MS} ms: dropped`,
        );
      }
      trace.disable();
      propagation.disable();
      context.disable();
      diag.disable();
    },
  };
}

function sampler(plan: SamplerPlan): Sampler {
  switch (plan.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(plan.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(plan.ratio) });
  }
}

/** The SDK's own warnings (an export that failed, a duplicate registration) as Ebb log lines. */
function diagLogger(logger: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) => {
    const err = args.find((a) => a instanceof Error);
    logger.warn({ event: 'tracing.sdk_warned', ...(err ? { err } : {}) }, `OpenTelemetry: ${message}`);
  };
  const drop = () => {};
  return { error: warn, warn, info: drop, debug: drop, verbose: drop };
}
