import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { createRedis, waitForReady } from '@ebb/queue';
import { redisUrl } from '@ebb/queue/test-support';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../test/ports.js';
import { healthCheck, postgresCheck, redisCheck } from './health.js';
import { EBB_VERSION } from './version.js';

describe('healthCheck against the real stores', () => {
  let pg: FreshSchemaDb;
  let redis: Redis;
  beforeAll(async () => {
    pg = await freshSchemaDb();
    redis = createRedis(redisUrl(), { role: 'producer' });
    await waitForReady(redis);
  });
  afterAll(async () => {
    await redis.quit();
    await pg.close();
  });

  it('passes when Postgres and Redis answer, and reports the fallbacks as given', async () => {
    const report = await healthCheck({
      checks: { postgres: postgresCheck(pg.db), redis: redisCheck(redis) },
      fallbacks: { database: false, queue: false, llm: true },
    });
    expect(report).toEqual({
      ok: true,
      version: EBB_VERSION,
      checks: {
        postgres: { ok: true, ms: expect.any(Number) },
        redis: { ok: true, ms: expect.any(Number) },
      },
      fallbacks: { database: false, queue: false, llm: true },
      degraded: {},
      mcp: {},
      contextCache: null,
    });
  });

  it('fails a Redis check on a closed port within the timeout, without holding up the others', async () => {
    // A worker-style connection queues the PING until it reconnects, which never happens.
    const dead = new Redis({ host: '127.0.0.1', port: await closedPort(), maxRetriesPerRequest: null });
    dead.on('error', () => {});
    try {
      const started = performance.now();
      const report = await healthCheck({
        checks: { postgres: postgresCheck(pg.db), redis: redisCheck(dead) },
        timeoutMs: 300,
      });
      const elapsed = performance.now() - started;
      expect(report.ok).toBe(false);
      expect(report.checks.postgres?.ok).toBe(true);
      expect(report.checks.redis).toEqual({
        ok: false,
        ms: expect.any(Number),
        error: 'timed out after 300 ms',
      });
      expect(report.checks.redis?.ms).toBeGreaterThanOrEqual(299);
      // Bounded by the timeout, not by ioredis's reconnects (which go on forever).
      expect(elapsed).toBeLessThan(5_000);
    } finally {
      dead.disconnect();
    }
  });

  it("fails a producer connection's check at once with the client's error", async () => {
    const dead = createRedis(`redis://127.0.0.1:${await closedPort()}`, { role: 'producer' });
    try {
      const report = await healthCheck({ checks: { redis: redisCheck(dead) }, timeoutMs: 10_000 });
      expect(report.ok).toBe(false);
      expect(report.checks.redis?.error).toMatch(/writeable|ECONNREFUSED|closed/i);
      expect(report.checks.redis?.ms).toBeLessThan(10_000);
    } finally {
      dead.disconnect();
    }
  });

  it('fails a Postgres check whose pool is gone', async () => {
    const other = await freshSchemaDb();
    await other.close();
    const report = await healthCheck({ checks: { postgres: postgresCheck(other.db) } });
    expect(report.ok).toBe(false);
    expect(report.checks.postgres?.error).toMatch(/pool/i);
  });
});

describe('healthCheck', () => {
  it('masks credentials in error messages and falls back to the code', async () => {
    const refused = Object.assign(new AggregateError([], ''), { code: 'ECONNREFUSED' });
    const report = await healthCheck({
      checks: {
        url: async () => {
          throw new Error('could not reach postgres://ebb:hunter2@db.internal:5432/ebb');
        },
        refused: () => Promise.reject(refused),
        thrown: () => Promise.reject('down'),
      },
    });
    expect(report.checks.url?.error).toBe('could not reach postgres://ebb:***@db.internal:5432/ebb');
    expect(JSON.stringify(report)).not.toContain('hunter2');
    expect(report.checks.refused?.error).toBe('ECONNREFUSED');
    expect(report.checks.thrown?.error).toBe('down');
    expect(report.fallbacks).toEqual({});
  });

  it('is healthy with no checks', async () => {
    expect(await healthCheck({ checks: {} })).toEqual({
      ok: true,
      version: EBB_VERSION,
      checks: {},
      fallbacks: {},
      degraded: {},
      mcp: {},
      contextCache: null,
    });
    // A platform that is not connected yet is reported, and does not make the process unhealthy.
    expect(await healthCheck({ checks: {}, degraded: { slack: 'getaddrinfo ENOTFOUND slack.com' } })).toEqual(
      {
        ok: true,
        version: EBB_VERSION,
        checks: {},
        fallbacks: {},
        degraded: { slack: 'getaddrinfo ENOTFOUND slack.com' },
        mcp: {},
        contextCache: null,
      },
    );
    // So is an MCP server that is down: the model loses its tools, the process stays healthy.
    const mcp = {
      github: { status: 'failed', transport: 'http', tools: 0, restarts: 3, lastError: 'fetch failed' },
    } as const;
    expect(await healthCheck({ checks: {}, mcp })).toMatchObject({
      ok: true,
      mcp: { github: { status: 'failed', tools: 0, restarts: 3 } },
    });
  });
});
