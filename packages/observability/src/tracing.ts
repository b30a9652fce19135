/**
 * Traces, when the standard OpenTelemetry variables ask for them (`tracing-plan.ts` says which and
 * how): the SDK and its OTLP exporter are imported here, dynamically, only then. With no endpoint
 * set nothing of the SDK is loaded, and every span Ebb's code starts (through `@opentelemetry/api`)
 * is the API's non-recording no-op.
 *
 * Call it once per process, first thing after the environment and the logger (before the parts that
 * start spans), and `shutdown()` it last, after every part that could still end a span.
 */
import type { Logger } from '@ebb/core';
import { planTracing, type TracingEnv, type TracingPlanOptions } from './tracing-plan.js';

export interface Tracing {
  /** Sends the spans still buffered (bounded in time) and puts the API back to its no-ops. */
  shutdown(): Promise<void>;
}

const NO_TRACING: Tracing = { shutdown: async () => {} };

/** The stop step that flushes the last spans: their own bound (5 s) and a second to log it. */
export const TRACING_STOP_STEP_MS = 6_000;

export async function startTracing(
  env: TracingEnv,
  logger: Logger,
  options: TracingPlanOptions = {},
): Promise<Tracing> {
  const plan = planTracing(env, options);
  for (const { variable, reason } of plan.ignored) {
    logger.warn({ event: 'tracing.setting_ignored', variable, reason }, `${variable} ${reason}`);
  }
  if (plan.kind === 'off') return NO_TRACING;
  const { startOtlpTracing } = await import('./otlp-tracing.js');
  const tracing = startOtlpTracing(plan, logger);
  logger.info(
    {
      event: 'tracing.started',
      endpoint: plan.tracesUrl,
      serviceName: plan.serviceName,
      sampler: plan.sampler.name,
      ...('ratio' in plan.sampler ? { ratio: plan.sampler.ratio } : {}),
    },
    `tracing: spans go to ${plan.tracesUrl} as ${plan.serviceName} (${plan.sampler.name})`,
  );
  return tracing;
}
