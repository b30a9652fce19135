/**
 * The web server's request spans, recorded by the real SDK: named by the route that answered, never
 * the path; a caller's trace continued; monitoring polls and event streams left out.
 */
import { recordSpans } from '@ebb/testing/span-recorder';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Hono } from 'hono';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { traceRequests } from './request-spans.js';

const spans = recordSpans();
const ended = spans.ended;
afterAll(() => spans.stop());
beforeEach(() => spans.clear());

/** An app like the web channel's: the middleware first, a guard, routes with a channel parameter. */
function app(): Hono {
  const app = new Hono();
  app.use('*', traceRequests());
  app.use('/api/channels/:id/*', async (_c, next) => next());
  app.post('/api/channels/:id/messages', (c) =>
    c.json({ inSpan: trace.getActiveSpan()?.spanContext().spanId ?? null }),
  );
  app.get('/api/channels/:id/events', (c) => c.text('data: {}\n\n'));
  app.get('/api/boom', () => {
    throw new Error('boom');
  });
  app.onError((_err, c) => c.text('internal', 500));
  app.get('/healthz', (c) => c.text('ok'));
  app.get('/metrics', (c) => c.text(''));
  return app;
}

describe('request spans', () => {
  it('name a request by its route and say its status, with nothing of its path, query or body', async () => {
    const res = await app().request('/api/channels/secret-room/messages?token=abc', {
      method: 'POST',
      body: JSON.stringify({ text: 'zqz private words' }),
    });
    const { inSpan } = (await res.json()) as { inSpan: string | null };
    expect(ended).toHaveLength(1);
    const [span] = ended;
    expect(span?.name).toBe('POST /api/channels/:id/messages');
    expect(span?.kind).toBe(SpanKind.SERVER);
    expect(span?.attributes).toEqual({
      'http.request.method': 'POST',
      'http.route': '/api/channels/:id/messages',
      'http.response.status_code': 200,
    });
    // The handler runs inside it, so a turn it starts is its child.
    expect(inSpan).toBe(span?.spanContext().spanId);
    expect(JSON.stringify(span?.attributes)).not.toMatch(/secret-room|token|zqz/);
  });

  it("continues the caller's trace from its traceparent", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    await app().request('/api/channels/ops/messages', {
      method: 'POST',
      headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
    });
    expect(ended[0]?.spanContext().traceId).toBe(traceId);
    expect(ended[0]?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
  });

  it('marks a request answered with a 5xx as an error', async () => {
    const res = await app().request('/api/boom');
    expect(res.status).toBe(500);
    expect(ended[0]?.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(ended[0]?.attributes['http.response.status_code']).toBe(500);
  });

  it('leaves out /metrics, /healthz and event streams', async () => {
    const web = app();
    await web.request('/healthz');
    await web.request('/metrics');
    await web.request('/api/channels/ops/events', { headers: { accept: 'text/event-stream' } });
    expect(ended).toEqual([]);
    await web.request('/api/channels/ops/events');
    expect(ended.map((s) => s.name)).toEqual(['GET /api/channels/:id/events']);
  });
});
