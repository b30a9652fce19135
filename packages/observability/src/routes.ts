/**
 * The observability routes on a hono app: `GET /metrics` (Prometheus text exposition) and
 * `GET /healthz` (200 when every check passes, 503 otherwise, the `HealthReport` as JSON either way).
 * Neither is cached, and neither carries message text, channel keys or credentials.
 */
import type { Env, Hono } from 'hono';
import type { HealthReport } from './health.js';
import type { EbbMetrics } from './metrics.js';

export interface ObservabilityRoutesOptions {
  readonly metrics: Pick<EbbMetrics, 'metricsText' | 'contentType'>;
  /** Runs the checks for one request, e.g. `() => healthCheck({ checks, fallbacks })`. */
  readonly health: () => Promise<HealthReport>;
}

const NO_STORE = { 'cache-control': 'no-store' } as const;

export function mountObservability<E extends Env>(app: Hono<E>, options: ObservabilityRoutesOptions): void {
  app.get('/metrics', async (c) =>
    c.body(await options.metrics.metricsText(), 200, {
      ...NO_STORE,
      'content-type': options.metrics.contentType,
    }),
  );
  app.get('/healthz', async (c) => {
    const report = await options.health();
    return c.json(report, report.ok ? 200 : 503, NO_STORE);
  });
}
