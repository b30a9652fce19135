/**
 * The collector against hand-built exports encoded with the protocol's definitions: what it records
 * of a span, gzip, and what it refuses. That the SDK's own exporter is understood is proved where
 * Ebb's spans are (`packages/observability/src/traced-models.test.ts`).
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeOtlpCollector, loadOtlpTraceTypes } from './index.js';

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const PARENT_ID = 'eee19b7ec3c1b174';
const SPAN_ID = 'eee19b7ec3c1b173';
const bytes = (hex: string) => Buffer.from(hex, 'hex');

/** One resource with one scope with the given spans, as an exporter would send them. */
function exportBody(spans: Record<string, unknown>[]): Uint8Array {
  const { request } = loadOtlpTraceTypes();
  const message = request.fromObject({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'ebb-test' } }] },
        scopeSpans: [{ scope: { name: '@ebb/observability', version: '0.1.0' }, spans }],
      },
    ],
  });
  return request.encode(message).finish();
}

const CHILD = {
  traceId: bytes(TRACE_ID),
  spanId: bytes(SPAN_ID),
  parentSpanId: bytes(PARENT_ID),
  name: 'chat gpt-4o-mini',
  kind: 3, // SPAN_KIND_CLIENT
  startTimeUnixNano: '1767225600000000000',
  endTimeUnixNano: '1767225600250000000',
  attributes: [
    { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
    { key: 'gen_ai.usage.input_tokens', value: { intValue: 812 } },
    { key: 'ratio', value: { doubleValue: 0.25 } },
    { key: 'cached', value: { boolValue: false } },
    {
      key: 'gen_ai.response.finish_reasons',
      value: { arrayValue: { values: [{ stringValue: 'stop' }] } },
    },
  ],
  events: [{ name: 'retry', attributes: [{ key: 'code', value: { stringValue: 'llm_rate_limited' } }] }],
  status: { code: 2, message: 'llm_rate_limited' },
};

let collector: FakeOtlpCollector;
beforeAll(async () => {
  collector = await FakeOtlpCollector.start();
});
afterAll(() => collector.close());
beforeEach(() => collector.reset());

async function post(body: Uint8Array, headers: Record<string, string> = {}, path = '/v1/traces') {
  return fetch(`${collector.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf', ...headers },
    body,
  });
}

describe('FakeOtlpCollector', () => {
  it('records each span of an export: ids in hex, parent, kind, attributes, events, status, resource', async () => {
    const root = { traceId: bytes(TRACE_ID), spanId: bytes(PARENT_ID), name: 'turn', kind: 1 };
    const waited = collector.waitForSpan('chat gpt-4o-mini');
    const res = await post(exportBody([root, CHILD]));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-protobuf');
    const span = await waited;
    expect(span).toEqual({
      name: 'chat gpt-4o-mini',
      traceId: TRACE_ID,
      spanId: SPAN_ID,
      parentSpanId: PARENT_ID,
      kind: 'client',
      attributes: {
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.input_tokens': 812,
        ratio: 0.25,
        cached: false,
        'gen_ai.response.finish_reasons': ['stop'],
      },
      status: { code: 'error', message: 'llm_rate_limited' },
      events: [{ name: 'retry', attributes: { code: 'llm_rate_limited' } }],
      startTimeUnixNano: 1767225600000000000n,
      endTimeUnixNano: 1767225600250000000n,
      resource: { 'service.name': 'ebb-test' },
      scope: { name: '@ebb/observability', version: '0.1.0' },
    });
    const turn = collector.spans.find((s) => s.name === 'turn');
    expect(turn).toMatchObject({ kind: 'internal', status: { code: 'unset' }, attributes: {} });
    expect(turn?.parentSpanId).toBeUndefined();
    expect(collector.trace(TRACE_ID).map((s) => s.name)).toEqual(['turn', 'chat gpt-4o-mini']);
    expect(collector.exports).toEqual({ accepted: 1, refused: 0 });
  });

  it('takes a gzipped export', async () => {
    const res = await post(gzipSync(exportBody([CHILD])), { 'content-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(collector.spans.map((s) => s.spanId)).toEqual([SPAN_ID]);
  });

  it('refuses another path, another content type and a body that is not an export, recording nothing', async () => {
    const body = exportBody([CHILD]);
    expect((await post(body, {}, '/v1/metrics')).status).toBe(404);
    expect((await post(body, { 'content-type': 'application/json' })).status).toBe(415);
    expect((await post(Uint8Array.from([0x0a, 0xff, 0xff]))).status).toBe(400);
    expect(collector.exports).toEqual({ accepted: 0, refused: 3 });
    expect(collector.spans).toEqual([]);
  });

  it('gives up waiting for a span that never arrives', async () => {
    await expect(collector.waitForSpan('never', 50)).rejects.toThrow(/timed out after 50 ms/);
  });
});
