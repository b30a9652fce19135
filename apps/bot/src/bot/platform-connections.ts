/**
 * Starting the platform adapters so that one platform that cannot connect does not take the others
 * down. A start that fails in a way time can mend (a DNS or network failure, the platform down: the
 * caller's `degradable`) leaves the platform *degraded*: the other platforms and the web channel
 * run, and the start is tried again in the background with capped exponential backoff until it
 * connects or Ebb stops. Any other failure (a refused token) is thrown: that needs an operator, and
 * a process that exits says so louder than a retry loop.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Backoff,
  backoffDelayMs,
  errorText,
  type Platform,
  type PlatformAdapter,
  type PlatformHandlers,
} from '@ebb/core';
import type { Logger } from '@ebb/logger';

export interface PlatformStartPolicy {
  /** Whether a failed start is worth retrying in the background (else it is thrown). */
  readonly degradable: (err: unknown) => boolean;
  /** The first wait before a retry; it doubles up to `maxDelayMs` (core's `Backoff`, no jitter). */
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

export const DEFAULT_PLATFORM_RETRY = { initialDelayMs: 1_000, maxDelayMs: 60_000 } as const;

export class PlatformConnections {
  readonly #log: Logger;
  /** Platforms not connected yet, with the error of their last try. */
  readonly #degraded = new Map<Platform, string>();
  readonly #stopping = new AbortController();
  readonly #retries = new Set<Promise<void>>();

  constructor(logger: Logger) {
    this.#log = logger;
  }

  /** Platforms that could not connect yet, with their last error (for `/healthz`). */
  degraded(): Record<string, string> {
    return Object.fromEntries(this.#degraded);
  }

  /** Starts `adapter`; a degradable failure is retried in the background instead of thrown. */
  async start(
    adapter: PlatformAdapter,
    handlers: PlatformHandlers,
    policy?: PlatformStartPolicy,
  ): Promise<void> {
    try {
      await adapter.start(handlers);
    } catch (err) {
      if (policy === undefined || adapter.platform === 'web' || !policy.degradable(err)) throw err;
      this.#degraded.set(adapter.platform, errorText(err));
      this.#log.warn(
        { event: 'platform.degraded', platform: adapter.platform, err },
        `${adapter.platform} could not connect; the other platforms run, and it is retried in the background`,
      );
      const retry = this.#retry(adapter, handlers, policy);
      this.#retries.add(retry);
      void retry.finally(() => this.#retries.delete(retry));
    }
  }

  /** Stops retrying (waits for a try in progress; a platform that connects meanwhile is stopped). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await Promise.allSettled([...this.#retries]);
  }

  async #retry(
    adapter: PlatformAdapter,
    handlers: PlatformHandlers,
    policy: PlatformStartPolicy,
  ): Promise<void> {
    const backoff: Backoff = {
      initialDelayMs: policy.initialDelayMs ?? DEFAULT_PLATFORM_RETRY.initialDelayMs,
      maxDelayMs: policy.maxDelayMs ?? DEFAULT_PLATFORM_RETRY.maxDelayMs,
    };
    const signal = this.#stopping.signal;
    // Try 1 was the start's own; try `attempt` follows retry `attempt - 1`.
    for (let attempt = 2; !signal.aborted; attempt++) {
      try {
        await sleep(backoffDelayMs(backoff, attempt - 1), undefined, { signal });
      } catch {
        return; // stopping
      }
      try {
        await adapter.start(handlers);
      } catch (err) {
        this.#degraded.set(adapter.platform, errorText(err));
        const retryInMs = backoffDelayMs(backoff, attempt);
        this.#log.warn(
          { event: 'platform.degraded', platform: adapter.platform, attempt, retryInMs, err },
          `${adapter.platform} still cannot connect`,
        );
        continue;
      }
      if (signal.aborted) {
        await adapter.stop().catch(() => {});
        return;
      }
      this.#degraded.delete(adapter.platform);
      this.#log.info(
        { event: 'platform.connected', platform: adapter.platform, attempt },
        `${adapter.platform} connected after ${attempt} tries`,
      );
      return;
    }
  }
}
