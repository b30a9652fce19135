/**
 * `/healthz`: named checks (Postgres, Redis) run at once, each bounded by a timeout so a dead
 * dependency answers "down" in time instead of hanging the probe, and the embedded fallbacks in
 * use (embedded database, in-process queue, offline model), which are reported but do not make the
 * process unhealthy: they are how Ebb runs on a bare machine. MCP servers are reported the same
 * way: a tool server that is down costs the model some tools, not the process its health (Ebb
 * restarts it; restarting Ebb would not mend it). `/healthz` answers anyone, so a server shows only
 * its state, tool count and restarts: why it failed (which may name internal hosts, paths and
 * variables) is in the log (`mcp.server_failed`).
 */

import { errorText, withTimeout } from '@ebb/core';
import { type SQL, sql } from 'drizzle-orm';
import type { ContextCacheStats } from './context-cache-metrics.js';
import { EBB_VERSION } from './version.js';

/** Resolves when the dependency answers; rejects (or hangs) when it does not. */
export type HealthCheck = () => Promise<void>;

export interface HealthOptions {
  readonly checks: Readonly<Record<string, HealthCheck>>;
  /** Which embedded fallbacks are in use, by name (`database`, `queue`, `llm`, …). */
  readonly fallbacks?: Readonly<Record<string, boolean>>;
  /**
   * Platforms not connected yet, with their last error. Reported, but not unhealthy: the process
   * serves the rest and retries them itself; restarting it would not mend a DNS or network failure.
   */
  readonly degraded?: Readonly<Record<string, string>>;
  /** Each MCP server's state (`McpServers.states()` of `@ebb/tools`), by name. Reported, not unhealthy. */
  readonly mcp?: Readonly<Record<string, McpServerReport>>;
  /** The bot's working-context cache (`ebb status` shows it). Reported, not unhealthy. */
  readonly contextCache?: ContextCacheStats;
  /** Bound on each check. */
  readonly timeoutMs?: number;
}

/** An MCP server as `/healthz` shows it: nothing more, whatever else the state given carries. */
export interface McpServerReport {
  readonly status: 'starting' | 'ready' | 'restarting' | 'failed';
  readonly tools: number;
  readonly restarts: number;
}

export const DEFAULT_HEALTH_OPTIONS = {
  fallbacks: {},
  degraded: {},
  mcp: {},
  timeoutMs: 2_000,
} as const satisfies Required<Omit<HealthOptions, 'checks' | 'contextCache'>>;

export interface CheckResult {
  readonly ok: boolean;
  /** How long the check took (up to the timeout), in whole milliseconds. */
  readonly ms: number;
  /** What went wrong: the error's message (credentials in URLs masked) or its code. */
  readonly error?: string;
}

export interface HealthReport {
  /** Every check passed. */
  readonly ok: boolean;
  /** The version this process runs (`EBB_VERSION`). */
  readonly version: string;
  readonly checks: Record<string, CheckResult>;
  readonly fallbacks: Record<string, boolean>;
  readonly degraded: Record<string, string>;
  readonly mcp: Record<string, McpServerReport>;
  /** Null in a process without a bot. */
  readonly contextCache: ContextCacheStats | null;
}

export async function healthCheck(options: HealthOptions): Promise<HealthReport> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_HEALTH_OPTIONS.timeoutMs;
  const results = await Promise.all(
    Object.entries(options.checks).map(async ([name, check]) => {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        await withTimeout(check, timeoutMs);
        return [name, { ok: true, ms: elapsed() }] as const;
      } catch (err) {
        return [name, { ok: false, ms: elapsed(), error: errorText(err) }] as const;
      }
    }),
  );
  const checks: Record<string, CheckResult> = Object.fromEntries(results);
  return {
    ok: results.every(([, result]) => result.ok),
    version: EBB_VERSION,
    checks,
    fallbacks: { ...(options.fallbacks ?? DEFAULT_HEALTH_OPTIONS.fallbacks) },
    degraded: { ...options.degraded },
    mcp: Object.fromEntries(
      Object.entries(options.mcp ?? {}).map(([name, { status, tools, restarts }]) => [
        name,
        { status, tools, restarts },
      ]),
    ),
    contextCache: options.contextCache ?? null,
  };
}

/** What drizzle's `execute` needs: either driver's database (`Database['db']` of `@ebb/db`). */
export interface SqlExecutor {
  execute(query: SQL): PromiseLike<unknown>;
}

/** `select 1` on the database (Postgres or embedded PGlite). */
export function postgresCheck(db: SqlExecutor): HealthCheck {
  return async () => {
    try {
      await db.execute(sql`select 1`);
    } catch (err) {
      // drizzle wraps the driver's error in "Failed query: select 1"; the driver's says what is wrong.
      throw err instanceof Error && err.cause instanceof Error ? err.cause : err;
    }
  };
}

/** What a Redis check needs: an ioredis client. */
export interface RedisPinger {
  ping(): Promise<unknown>;
}

/**
 * PING. A producer connection (no offline queue) fails at once while Redis is down; a worker or
 * subscriber connection queues the command until it reconnects, which the health timeout bounds.
 */
export function redisCheck(redis: RedisPinger): HealthCheck {
  return async () => {
    await redis.ping();
  };
}
