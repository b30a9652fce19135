import { createServer } from 'node:net';
import { redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { TcpProxy } from '@ebb/testing/tcp-proxy';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  closeRedis,
  createRedis,
  describeRedisUrl,
  isRedisReachable,
  RedisUnavailableError,
  redisOptionsFor,
  waitForReady,
} from './redis-connection.js';

/** A port on 127.0.0.1 with nothing listening. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A port that accepts TCP connections and never answers (a hung Redis). */
async function silentPort(): Promise<{ port: number; close: () => Promise<unknown> }> {
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('redisOptionsFor', () => {
  it('gives workers and subscribers endless retries and producers a fast failure', () => {
    expect(redisOptionsFor('worker')).toMatchObject({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    expect(redisOptionsFor('subscriber')).toMatchObject({
      maxRetriesPerRequest: null,
      autoResubscribe: true,
    });
    const producer = redisOptionsFor('producer');
    expect(producer).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    const retry = producer.retryStrategy;
    expect(typeof retry).toBe('function');
    const delays = [1, 5, 50, 5_000].map((n) => (typeof retry === 'function' ? retry(n) : undefined));
    expect(delays.every((d) => typeof d === 'number' && d > 0 && d <= 2_000)).toBe(true);
  });
});

describe('isRedisReachable', () => {
  it('is true for the test Redis', async () => {
    expect(await isRedisReachable(redisUrl(), 2_000)).toBe(true);
  });

  it('is false when nothing listens', async () => {
    expect(await isRedisReachable(`redis://127.0.0.1:${await deadPort()}`, 500)).toBe(false);
  });

  it('is false when the server never answers', async () => {
    const silent = await silentPort();
    try {
      expect(await isRedisReachable(`redis://127.0.0.1:${silent.port}`, 200)).toBe(false);
    } finally {
      await silent.close();
    }
  });

  it('is false for a malformed URL', async () => {
    expect(await isRedisReachable('not a url', 200)).toBe(false);
  });
});

describe('createRedis', () => {
  it('connects a producer to the test Redis', async () => {
    const redis = createRedis(redisUrl(), { role: 'producer' });
    try {
      await waitForReady(redis);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      await redis.quit();
    }
  });

  it('rejects a producer command at once while Redis is down instead of queueing it', async () => {
    const logger = new RecordingLogger();
    const redis = createRedis(`redis://127.0.0.1:${await deadPort()}`, { role: 'producer', logger });
    try {
      await expect(redis.get('x')).rejects.toThrow(/enableOfflineQueue/);
      await expect(waitForReady(redis, 300)).rejects.toBeInstanceOf(RedisUnavailableError);
      expect(logger.entries.filter((e) => e.level === 'warn').map((e) => e.message)).toEqual([
        'redis connection error',
      ]);
    } finally {
      redis.disconnect();
    }
  });
});

describe('closeRedis', () => {
  /** A connection of `role` to the test Redis through a proxy the test can stall, once it is ready. */
  async function behindProxy(role: 'producer' | 'subscriber') {
    const target = new URL(redisUrl());
    const proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 6379) });
    const redis = createRedis(`redis://127.0.0.1:${proxy.port}`, { role });
    redis.on('error', () => {});
    await waitForReady(redis);
    return { proxy, redis };
  }

  /** Resolves once the connection has ended (and will not reconnect). */
  const ended = (redis: Redis) =>
    redis.status === 'end' ? Promise.resolve() : new Promise((resolve) => redis.once('end', resolve));

  it('quits a ready connection: what was sent before is answered, then it ends', async () => {
    const { proxy, redis } = await behindProxy('subscriber');
    try {
      const ping = redis.ping();
      await closeRedis(redis);
      expect(await ping).toBe('PONG');
      await ended(redis);
    } finally {
      await proxy.close();
    }
  });

  // A process stopping during a network partition: the QUIT is never answered, and a subscriber
  // connection has no command timeout. Without the bound this waits until the partition heals.
  it('drops a connection whose Redis stopped answering instead of waiting for its QUIT', async () => {
    const { proxy, redis } = await behindProxy('subscriber');
    try {
      proxy.stall();
      await closeRedis(redis);
      await ended(redis);
    } finally {
      await proxy.close();
    }
  });
});

describe('describeRedisUrl', () => {
  it('drops credentials', () => {
    expect(describeRedisUrl('redis://user:hunter2@cache:6380/2')).toBe('cache:6380/2');
    expect(describeRedisUrl('redis://127.0.0.1')).toBe('127.0.0.1:6379');
  });
});
