import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { createRedis, waitForReady } from '@ebb/queue';
import { redisUrl } from '@ebb/queue/test-support';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { value } from '../test/exposition.js';
import { closedPort } from '../test/ports.js';
import { type HealthCheck, healthCheck, postgresCheck, redisCheck } from './health.js';
import { createMetrics } from './metrics.js';
import { mountObservability } from './routes.js';
import { serveObservability } from './serve-observability.js';
import { EBB_VERSION } from './version.js';

describe('/metrics and /healthz', () => {
  let pg: FreshSchemaDb;
  let redis: Redis;
  let dead: Redis;
  beforeAll(async () => {
    pg = await freshSchemaDb();
    redis = createRedis(redisUrl(), { role: 'producer' });
    await waitForReady(redis);
    dead = new Redis({ host: '127.0.0.1', port: await closedPort(), maxRetriesPerRequest: null });
    dead.on('error', () => {});
  });
  afterAll(async () => {
    dead.disconnect();
    await redis.quit();
    await pg.close();
  });

  function app(checks: Record<string, HealthCheck>) {
    const metrics = createMetrics({ processMetrics: false });
    const hono = new Hono();
    mountObservability(hono, {
      metrics,
      health: () => healthCheck({ checks, fallbacks: { database: false, queue: false }, timeoutMs: 300 }),
    });
    return { hono, metrics };
  }

  it('answers 200 with the report when Postgres and Redis are up', async () => {
    const { hono } = app({ postgres: postgresCheck(pg.db), redis: redisCheck(redis) });
    const res = await hono.request('/healthz');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({
      ok: true,
      version: EBB_VERSION,
      checks: { postgres: { ok: true, ms: expect.any(Number) }, redis: { ok: true, ms: expect.any(Number) } },
      fallbacks: { database: false, queue: false },
      degraded: {},
      mcp: {},
      contextCache: null,
    });
  });

  it('answers 503 naming the failed check when Redis is unreachable', async () => {
    const { hono } = app({ postgres: postgresCheck(pg.db), redis: redisCheck(dead) });
    const res = await hono.request('/healthz');
    expect(res.status).toBe(503);
    const body = await res.json();
    expect(body).toMatchObject({
      ok: false,
      checks: { postgres: { ok: true }, redis: { ok: false, error: 'timed out after 300 ms' } },
    });
  });

  it('serves the exposition text with its content type', async () => {
    const { hono, metrics } = app({});
    metrics.onCompactionEvent({ event: 'compaction.emergency', channel: 'web:lobby', tier: 'emergency' });
    const res = await hono.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(metrics.contentType);
    const text = await res.text();
    expect(value(text, 'ebb_emergency_truncations_total')).toBe(1);
    expect(text).not.toContain('lobby');
  });

  it('serves both on a port of their own for the worker', async () => {
    const metrics = createMetrics({ processMetrics: false });
    const server = await serveObservability({
      port: 0,
      metrics,
      health: () => healthCheck({ checks: { redis: redisCheck(redis) } }),
    });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      const text = await (await fetch(`${server.url}/metrics`)).text();
      expect(value(text, 'ebb_compaction_fallbacks_total')).toBe(0);
    } finally {
      await server.close();
    }
  });
});
