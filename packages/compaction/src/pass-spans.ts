/**
 * The steps of a pass as spans (`ebb memories`, `ebb splice`), children of the worker's `ebb
 * compaction pass` span (`@ebb/queue`'s `job-trace.ts`) beside its summarizer's (`ebb summarize`),
 * so a trace shows where a pass spent its time after the model. Their attributes are counts and
 * outcomes, never text. With tracing off each is the API's no-op.
 */
import { errorCodeOf } from '@ebb/core';
import { type Attributes, SpanStatusCode, trace } from '@opentelemetry/api';

const TRACER_NAME = '@ebb/compaction';

/** Runs `step` in a span named `name`, which ends with the attributes `attributesOf` reads off its result. */
export function inStepSpan<T>(
  name: string,
  step: () => Promise<T>,
  attributesOf: (result: T) => Attributes,
): Promise<T> {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, async (span) => {
    try {
      const result = await step();
      if (span.isRecording()) span.setAttributes(attributesOf(result));
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorCodeOf(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
