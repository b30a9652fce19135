/**
 * SIGTERM to `ebb worker` while Redis is away (a real worker process; Redis behind a proxy the test
 * cuts or stalls, or a port nothing listens on): with no job in hand there is nothing to wait for, so
 * it stops and exits 0, as it does with Redis up, whether Redis went away while it ran, stopped
 * answering behind a partition (each QUIT then waits 2 s at most), or was never there. (BullMQ's
 * watchdog on its blocking read, up to 6 s, is what it waits for before it exits.) A failed case
 * prints the worker's log events, to tell a stop that hung (no `worker.stopped`) from a process that
 * did not exit after it.
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { emptySchema } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ebbWorkerProcess, type SpawnedWorker } from '../spawn-ebb-worker.js';

const REPO_CONFIG = fileURLToPath(new URL('../../../../config.toml', import.meta.url));

let schema: Awaited<ReturnType<typeof emptySchema>>;
const proxies: TcpProxy[] = [];
const prefix = randomPrefix();
const children: ChildProcess[] = [];

beforeAll(async () => {
  schema = await emptySchema();
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const proxy of proxies) await proxy.close();
  await schema?.drop();
  await dropPrefix(prefix);
});

/** A proxy of the case's own in front of the test Redis. */
async function redisProxy(): Promise<TcpProxy> {
  const redis = new URL(redisUrl());
  const proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
  proxies.push(proxy);
  return proxy;
}

/** No Redis there: nothing listens on port 1. */
const NO_REDIS = 'redis://127.0.0.1:1';

/** `ebb worker` on the test's schema, with Redis at `redis`; its log events are printed if the case fails. */
function startWorker(redis: string, onTestFailed: (fn: () => void) => void): SpawnedWorker {
  const worker = ebbWorkerProcess({
    config: REPO_CONFIG,
    env: { DATABASE_URL: schema.url, REDIS_URL: redis, EBB_REDIS_PREFIX: prefix, EBB_METRICS_PORT: '0' },
  });
  children.push(worker.child);
  onTestFailed(() => console.error(`ebb worker's log events:\n${worker.events()}`));
  return worker;
}

/** SIGTERM, then: it exits 0, having stopped. */
async function stopsOnSigterm(worker: SpawnedWorker): Promise<void> {
  worker.child.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  const events = worker.lines().map((l) => l.event);
  expect(events).toEqual(expect.arrayContaining(['worker.stopping', 'worker.stopped']));
  // Exited all the same, but only because a connection outlived the stop: worth a look, not a failure.
  if (events.includes('shutdown.lingering'))
    console.warn(`ebb worker lingered after its stop:\n${worker.events()}`);
}

// At once: each is mostly a worker's start and its wait for BullMQ's watchdog.
describe.concurrent('ebb worker with Redis away', () => {
  it('exits 0 on SIGTERM when Redis went away while it ran', async ({ onTestFailed }) => {
    const proxy = await redisProxy();
    const worker = startWorker(`redis://127.0.0.1:${proxy.port}`, onTestFailed);
    await worker.logged('worker.ready');
    proxy.cut();
    await worker.logged('redis.connection_failed');
    await stopsOnSigterm(worker);
  }, 90_000);

  // Before: its stop waited 30 s for BullMQ's graceful close, then for ever on a QUIT nobody answered.
  it('exits 0 on SIGTERM when Redis stopped answering while it ran (a partition)', async ({
    onTestFailed,
  }) => {
    const proxy = await redisProxy();
    const worker = startWorker(`redis://127.0.0.1:${proxy.port}`, onTestFailed);
    await worker.logged('worker.ready');
    proxy.stall();
    await stopsOnSigterm(worker);
  }, 90_000);

  it('exits 0 on SIGTERM when Redis was never there', async ({ onTestFailed }) => {
    const worker = startWorker(NO_REDIS, onTestFailed);
    await worker.logged('redis.connection_failed');
    await stopsOnSigterm(worker);
  }, 90_000);
});
