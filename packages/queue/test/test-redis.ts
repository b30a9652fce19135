/**
 * Redis fixtures for integration tests: the real Redis from `REDIS_URL` (default 127.0.0.1), a
 * fresh key prefix per test so tests never see each other's keys or jobs, a cleanup that deletes
 * everything under a prefix, and a Redis of a test's own to kill (`DisposableRedis`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { Redis } from 'ioredis';
import { createRedis, redisKeys, waitForReady } from '../src/index.js';

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** A unique key prefix (also the BullMQ prefix), e.g. `ebbtest-3f9a0c1d2b4e`. */
export function randomPrefix(): string {
  return `ebbtest-${randomBytes(6).toString('hex')}`;
}

/** Deletes every key under `prefix` (SCAN + UNLINK, never KEYS); returns how many went. */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', redisKeys(prefix).everything, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** `cleanupPrefix` on a connection of its own: for a test's last step, when its own are closed. */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = createRedis(redisUrl(), { role: 'producer' });
  try {
    await waitForReady(redis);
    await cleanupPrefix(redis, prefix);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/**
 * A Redis of the test's own (`redis-server` on a free port) that it can kill and start again; it
 * keeps nothing across a restart (`--save ''`, no AOF), as a Redis run without persistence.
 */
export class DisposableRedis {
  readonly port: number;
  #process: ChildProcess | undefined;

  private constructor(port: number) {
    this.port = port;
  }

  static async start(): Promise<DisposableRedis> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    server.close();
    await once(server, 'close');
    const redis = new DisposableRedis(port);
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, empty); resolves once it accepts connections. */
  async restart(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    this.#process = child;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready`)));
    });
  }

  /** SIGKILL: everything it held is gone. */
  async kill(): Promise<void> {
    const child = this.#process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}
