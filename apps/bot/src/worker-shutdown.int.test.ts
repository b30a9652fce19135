/**
 * SIGTERM to `ebb worker` while Redis is away (a real worker process; Redis behind a proxy the test
 * cuts, or a port nothing listens on): with no job in hand there is nothing to wait for, so it stops
 * and exits 0, as it does with Redis up, whether Redis went away while it ran or was never there.
 * (BullMQ's watchdog on its blocking read, up to 6 s, is what it waits for before it exits.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { emptySchema } from '@ebb/testing/postgres';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const EBB = fileURLToPath(new URL('../bin/ebb.mjs', import.meta.url));
const REPO_CONFIG = fileURLToPath(new URL('../../../config.toml', import.meta.url));

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

interface Worker {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Resolves at the first log line whose message starts with `msg`; rejects if the worker exits first. */
  logs(msg: string): Promise<Record<string, unknown>>;
  lines(): Record<string, unknown>[];
}

/** `ebb worker` on the test's schema, with Redis at `redis`. */
function startWorker(redis: string): Worker {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (/^(EBB_|OPENAI_|SLACK_|DISCORD_)/.test(name)) delete env[name];
  const child = spawn(process.execPath, [EBB, 'worker', '--config', REPO_CONFIG], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      NODE_ENV: 'production',
      DATABASE_URL: schema.url,
      REDIS_URL: redis,
      EBB_REDIS_PREFIX: prefix,
      EBB_METRICS_PORT: '0',
    },
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  const waiting = new Set<() => void>();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    lines.push(JSON.parse(line) as Record<string, unknown>);
    for (const check of waiting) check();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    lines: () => lines,
    logs: (msg) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => String(l.msg).startsWith(msg));
          if (!line) return;
          waiting.delete(check);
          resolve(line);
        };
        waiting.add(check);
        check();
        void exited.then((code) =>
          reject(new Error(`ebb worker exited (${code}) before logging "${msg}": ${stderr}`)),
        );
      }),
  };
}

// At once: each is mostly a worker's start and its wait for BullMQ's watchdog.
describe.concurrent('ebb worker with Redis away', () => {
  it('exits 0 on SIGTERM when Redis went away while it ran', async () => {
    const worker = startWorker(`redis://127.0.0.1:${proxy.port}`);
    await worker.logs('compaction worker ready');
    proxy.cut();
    await worker.logs('redis connection error');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.lines().map((l) => l.msg)).toContain('stopping the compaction worker');
  }, 60_000);

  it('exits 0 on SIGTERM when Redis was never there', async () => {
    const worker = startWorker(NO_REDIS);
    await worker.logs('redis connection error');
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.lines().map((l) => l.msg)).toContain('stopping the compaction worker');
  }, 60_000);
});
