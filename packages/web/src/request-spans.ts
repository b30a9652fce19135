/**
 * A SERVER span per HTTP request to the web channel's server (the web API and the dashboard), in
 * OpenTelemetry's HTTP conventions: named `METHOD route` (`POST /api/channels/:id/messages`), with
 * the method, the route and the status. The route is the template, never the path: a path names a
 * channel, and a span holds neither a channel key nor a body, a header or a query. A caller's
 * `traceparent` is continued, so a service that posts to the web API sees Ebb's turn in its own trace.
 *
 * Not traced: `/metrics` and `/healthz` (polled every few seconds, they would be most of the traces)
 * and event streams (`Accept: text/event-stream`, open for as long as a page is). With tracing off
 * the span is the API's no-op.
 */
import { errorCodeOf } from '@ebb/core';
import {
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { routeClass } from './access.js';

const TRACER_NAME = '@ebb/web';

export const REQUEST_ATTRIBUTES = {
  method: 'http.request.method',
  route: 'http.route',
  status: 'http.response.status_code',
} as const;

const HEADERS: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/** The middleware; registered first, so the span holds every other middleware's time too. */
export function traceRequests(): MiddlewareHandler {
  return async (c, next) => {
    const headers = c.req.raw.headers;
    // The monitoring routes by the access rule's own classes.
    const monitoring = ['health', 'metrics'].includes(routeClass(c.req.path));
    if (monitoring || headers.get('accept')?.includes('text/event-stream')) {
      return next();
    }
    const method = c.req.method;
    const parent = propagation.extract(ROOT_CONTEXT, headers, HEADERS);
    await trace
      .getTracer(TRACER_NAME)
      .startActiveSpan(
        method,
        { kind: SpanKind.SERVER, attributes: { [REQUEST_ATTRIBUTES.method]: method } },
        parent,
        async (span: Span) => {
          try {
            await next();
            // The route that answered (the last matched), known only once it has.
            const route = routePath(c, -1);
            span.updateName(`${method} ${route}`);
            span.setAttributes({
              [REQUEST_ATTRIBUTES.route]: route,
              [REQUEST_ATTRIBUTES.status]: c.res.status,
            });
            if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorCodeOf(err) });
            throw err;
          } finally {
            span.end();
          }
        },
      );
  };
}
