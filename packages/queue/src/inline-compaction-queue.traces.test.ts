/**
 * A pass of the embedded queue is traced as a worker's is: a CONSUMER span, the child of the span
 * that queued it, holding the pass's own spans; with the real SDK recording what ends.
 */
import { recordSpans } from '@ebb/testing/span-recorder';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, expect, it } from 'vitest';
import { InlineCompactionQueue } from './inline-compaction-queue.js';

const spans = recordSpans();
afterAll(() => spans.stop());

const job = { channelKey: 'web:1', tier: 'aggressive', fromSeq: 1, toSeq: 5, generation: 0 } as const;

it('runs each pass in a span under the turn that queued it, with its attempts', async () => {
  let tries = 0;
  const seenIn: (string | undefined)[] = [];
  const queue = new InlineCompactionQueue({
    processor: async (pass) => {
      // The processor is called with the pass's fields, not the trace context it carried.
      expect(pass).not.toHaveProperty('trace');
      seenIn.push(trace.getActiveSpan()?.spanContext().spanId);
      tries += 1;
      if (tries === 1) throw new Error('flaky');
    },
    jobOptions: { attempts: 2, backoff: { type: 'exponential', delay: 1, jitter: 0 } },
    sleep: async () => {},
  });
  const turn = trace.getTracer('test').startSpan('turn');
  await context.with(trace.setSpan(context.active(), turn), () => queue.enqueue(job));
  turn.end();
  await queue.drain();
  await queue.close();

  const passes = spans.ended.filter((s) => s.name === 'ebb compaction pass');
  expect(passes).toHaveLength(2);
  for (const [i, pass] of passes.entries()) {
    expect(pass.kind).toBe(SpanKind.CONSUMER);
    expect(pass.spanContext().traceId).toBe(turn.spanContext().traceId);
    expect(pass.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
    expect(pass.attributes).toMatchObject({
      'ebb.compaction.tier': 'aggressive',
      'ebb.compaction.attempt': i + 1,
    });
    expect(Number(pass.attributes['ebb.compaction.queue_wait_ms'])).toBeGreaterThanOrEqual(0);
    // No queue between processes: no messaging system.
    expect(pass.attributes).not.toHaveProperty('messaging.system');
    expect(seenIn[i]).toBe(pass.spanContext().spanId);
  }
  expect(passes[0]?.status.code).toBe(SpanStatusCode.ERROR);
});
