import type { PlatformAdapter, PlatformHandlers } from '@ebb/core';
import { EbbError } from '@ebb/core';
import { createLogger } from '@ebb/logger';
import { describe, expect, it, vi } from 'vitest';
import { describeStartFailure } from '../start/start-failure.js';
import { PlatformConnections } from './platform-connections.js';

/** An adapter port whose `start` fails with the scripted errors, then connects. */
class FlakyAdapter implements PlatformAdapter {
  readonly platform = 'discord' as const;
  starts = 0;
  stops = 0;
  constructor(readonly failures: unknown[]) {}
  async start() {
    this.starts++;
    const failure = this.failures.shift();
    if (failure !== undefined) throw failure;
  }
  async send() {
    return { platformMessageId: 'x' };
  }
  async typing() {}
  async stop() {
    this.stops++;
  }
}

const handlers = {} as PlatformHandlers;
const logger = createLogger({ level: 'silent' });
const policy = {
  degradable: (err: unknown) => describeStartFailure(err).kind !== 'refused',
  initialDelayMs: 5,
  maxDelayMs: 10,
};
const unreachable = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:443'), { code: 'ECONNREFUSED' });

describe('PlatformConnections', () => {
  it('runs degraded while a platform cannot connect, and connects it in the background', async () => {
    const adapter = new FlakyAdapter([unreachable(), unreachable(), unreachable()]);
    const connections = new PlatformConnections(logger);
    await connections.start(adapter, handlers, policy);
    expect(connections.degraded()).toEqual({ discord: 'connect ECONNREFUSED 127.0.0.1:443' });
    await vi.waitFor(() => expect(connections.degraded()).toEqual({}));
    expect(adapter.starts).toBe(4);
    await connections.stop();
  });

  it('throws a refused credential at once: that needs an operator, not a retry', async () => {
    const adapter = new FlakyAdapter([
      new EbbError('An API error occurred: TOKEN_INVALID', { code: 'discord_auth' }),
    ]);
    const connections = new PlatformConnections(logger);
    await expect(connections.start(adapter, handlers, policy)).rejects.toThrow(/TOKEN_INVALID/);
    expect(connections.degraded()).toEqual({});
  });

  it('stops retrying when Ebb stops', async () => {
    const adapter = new FlakyAdapter(Array.from({ length: 1_000 }, unreachable));
    const connections = new PlatformConnections(logger);
    await connections.start(adapter, handlers, { ...policy, initialDelayMs: 60_000 });
    await connections.stop();
    expect(adapter.starts).toBe(1);
  });
});
