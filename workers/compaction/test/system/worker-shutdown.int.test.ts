/**
 * SIGTERM to `ebb worker` while Redis is away (a real worker process; Redis behind a proxy the test
 * cuts, or a port nothing listens on): with no job in hand there is nothing to wait for, so it stops
 * and exits 0, as it does with Redis up, whether Redis went away while it ran or was never there.
 * (BullMQ's watchdog on its blocking read, up to 6 s, is what it waits for before it exits.)
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { emptySchema } from '@ebb/testing/postgres';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ebbWorkerProcess, type SpawnedWorker } from '../spawn-ebb-worker.js';

const REPO_CONFIG = fileURLToPath(new URL('../../../../config.toml', import.meta.url));

let schema: Awaited<ReturnType<typeof emptySchema>>;
let proxy: TcpProxy;
const prefix = randomPrefix();
const children: ChildProcess[] = [];

beforeAll(async () => {
  schema = await emptySchema();
  const redis = new URL(redisUrl());
  proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await proxy?.close();
  await schema?.drop();
  await dropPrefix(prefix);
});

/** No Redis there: nothing listens on port 1. */
const NO_REDIS = 'redis://127.0.0.1:1';

/** `ebb worker` on the test's schema, with Redis at `redis`. */
function startWorker(redis: string): SpawnedWorker {
  const worker = ebbWorkerProcess({
    config: REPO_CONFIG,
    env: { DATABASE_URL: schema.url, REDIS_URL: redis, EBB_REDIS_PREFIX: prefix, EBB_METRICS_PORT: '0' },
  });
  children.push(worker.child);
  return worker;
}

// At once: each is mostly a worker's start and its wait for BullMQ's watchdog.
describe.concurrent('ebb worker with Redis away', () => {
  it('exits 0 on SIGTERM when Redis went away while it ran', async () => {
    const worker = startWorker(`redis://127.0.0.1:${proxy.port}`);
    await worker.logged('worker.ready');
    proxy.cut();
    await worker.logged('redis.connection_failed');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.lines().map((l) => l.msg)).toContain('stopping the compaction worker');
  }, 60_000);

  it('exits 0 on SIGTERM when Redis was never there', async () => {
    const worker = startWorker(NO_REDIS);
    await worker.logged('redis.connection_failed');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.lines().map((l) => l.msg)).toContain('stopping the compaction worker');
  }, 60_000);
});
