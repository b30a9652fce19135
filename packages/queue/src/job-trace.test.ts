import { type Context, propagation, type TextMapPropagator } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { inPassSpan, traceOfEnqueue } from './job-trace.js';

const payload = { channelKey: 'web:ops', tier: 'background', fromSeq: 1, toSeq: 9, generation: 0 } as const;
const job = { attempt: 1, createdAt: 1_000, startedAt: 1_250 };

/** A propagator that writes one fixed header and remembers what it was asked to read. */
function recordingPropagator(read: Record<string, string>[]): TextMapPropagator {
  return {
    inject: (_context, carrier, setter) => setter.set(carrier, 'traceparent', '00-abc-def-01'),
    extract: (context: Context, carrier) => {
      read.push({ ...(carrier as Record<string, string>) });
      return context;
    },
    fields: () => ['traceparent'],
  };
}

afterEach(() => propagation.disable());

describe('a job in a trace', () => {
  it('carries nothing with tracing off, and runs its pass all the same', async () => {
    expect(traceOfEnqueue()).toBeUndefined();
    expect(await inPassSpan(payload, job, async () => 'done')).toBe('done');
    await expect(inPassSpan(payload, job, async () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
  });

  it("carries what the process's propagator writes, and the worker reads it back as the pass's parent", async () => {
    const read: Record<string, string>[] = [];
    propagation.setGlobalPropagator(recordingPropagator(read));
    const trace = traceOfEnqueue();
    expect(trace).toEqual({ traceparent: '00-abc-def-01' });
    await inPassSpan({ ...payload, ...(trace ? { trace } : {}) }, job, async () => undefined);
    expect(read).toEqual([{ traceparent: '00-abc-def-01' }]);
  });
});
