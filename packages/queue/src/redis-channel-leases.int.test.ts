/**
 * `RedisChannelLeases` on the real Redis, several instances on connections of their own standing for
 * several replicas: one holder at a time, waiters served in the order they came, fences that only
 * grow (also past a Redis restarted empty), a dead holder or waiter that blocks the channel for a TTL
 * at most, an aborted waiter that leaves, a holder told when its lease went to someone else, and
 * `acquire` refused loudly with Redis away. Assertions are on order and counts; waits are for events,
 * with generous limits.
 */
import { once } from 'node:events';
import type { ChannelLease } from '@ebb/core';
import { ChannelLeaseLostError } from '@ebb/core';
import { cleanupPrefix, DisposableRedis, dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { RedisChannelLeases } from './redis-channel-leases.js';
import { createRedis, RedisUnavailableError, waitForReady } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

const CH = 'slack:T1:C1';
const WAIT = { timeout: 15_000, interval: 10 };
const admin = createRedis(redisUrl(), { role: 'producer' });
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});
afterAll(() => admin.quit());

async function freshPrefix(): Promise<string> {
  await waitForReady(admin);
  const prefix = randomPrefix();
  closers.push(() => dropPrefix(prefix));
  return prefix;
}

/** One replica's leases on a producer and a subscriber connection of its own; `kill` drops both. */
async function replica(prefix: string, options: { readonly ttlMs?: number; readonly url?: string } = {}) {
  const url = options.url ?? redisUrl();
  const connection = createRedis(url, { role: 'producer' });
  const subscriber = createRedis(url, { role: 'subscriber' });
  await Promise.all([waitForReady(connection), waitForReady(subscriber)]);
  const leases = new RedisChannelLeases({
    connection,
    subscriber,
    prefix,
    ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
  });
  const kill = () => {
    connection.disconnect();
    subscriber.disconnect();
  };
  closers.push(async () => {
    await leases.close();
    kill();
  });
  return { leases, kill };
}

const queueLength = (prefix: string) => admin.zcard(redisKeys(prefix).channelLeaseQueue(CH));

/** A pending promise's state, for "still waiting" checks. */
function track<T>(promise: Promise<T>) {
  const state = { settled: false, value: undefined as T | undefined, error: undefined as unknown };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

it('lets one holder at a time run, among many acquirers on several replicas, with growing fences', async () => {
  const prefix = await freshPrefix();
  const replicas = await Promise.all([0, 1, 2, 3].map(() => replica(prefix)));
  const first = await replicas[0]?.leases.acquire(CH);
  // Every acquirer queues behind the first holder, so all of them contend.
  let inside = 0;
  let overlaps = 0;
  const fences: number[] = [];
  const turns = replicas.flatMap(({ leases }) =>
    Array.from({ length: 10 }, async () => {
      const lease = await leases.acquire(CH);
      if (++inside > 1) overlaps++;
      fences.push(lease.fence);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      inside--;
      await lease.release();
    }),
  );
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(40), WAIT);
  expect(fences).toEqual([]);
  await first?.release();
  await Promise.all(turns);
  expect(overlaps).toBe(0);
  expect(fences).toHaveLength(40);
  const all = [first?.fence ?? 0, ...fences];
  for (let i = 1; i < all.length; i++) expect(all[i]).toBeGreaterThan(all[i - 1] ?? 0);
  expect(all.every(Number.isSafeInteger)).toBe(true);
  expect(await queueLength(prefix)).toBe(0);
});

it('serves waiters across replicas in the order they came', async () => {
  const prefix = await freshPrefix();
  const replicas = await Promise.all([0, 1, 2].map(() => replica(prefix)));
  const holder = await replicas[0]?.leases.acquire(CH);
  const order: number[] = [];
  const waits: Promise<void>[] = [];
  for (let i = 1; i <= 6; i++) {
    const leases = replicas[i % 3]?.leases;
    waits.push(
      (async () => {
        const lease = await leases?.acquire(CH);
        order.push(i);
        await lease?.release();
      })(),
    );
    await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(i), WAIT);
  }
  await holder?.release();
  await Promise.all(waits);
  expect(order).toEqual([1, 2, 3, 4, 5, 6]);
});

it('keeps a held lease past its TTL while a waiter waits, and hands it over on release', async () => {
  const prefix = await freshPrefix();
  const [a, b] = await Promise.all([replica(prefix, { ttlMs: 300 }), replica(prefix, { ttlMs: 300 })]);
  const held = await a.leases.acquire(CH);
  const waiting = track(b.leases.acquire(CH));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(1), WAIT);
  // Renewed six times, every third of the TTL: twice the 300 ms a lease lives unrenewed.
  const key = redisKeys(prefix).channelLease(CH);
  let renewals = 0;
  let last = await admin.pttl(key);
  await vi.waitFor(async () => {
    const now = await admin.pttl(key);
    if (now > last) renewals++;
    last = now;
    expect(renewals).toBeGreaterThanOrEqual(6);
  }, WAIT);
  expect(waiting.settled).toBe(false);
  expect(held.lost.aborted).toBe(false);
  await held.release();
  await vi.waitFor(() => expect(waiting.settled).toBe(true), WAIT);
  expect((waiting.value as ChannelLease).fence).toBeGreaterThan(held.fence);
  await (waiting.value as ChannelLease).release();
});

it('gives a greater fence after the fence and lease keys are gone, as after a restart', async () => {
  const prefix = await freshPrefix();
  const { leases } = await replica(prefix);
  const first = await leases.acquire(CH);
  await first.release();
  const second = await leases.acquire(CH);
  expect(second.fence).toBeGreaterThan(first.fence);
  await cleanupPrefix(admin, prefix);
  expect(await admin.exists(redisKeys(prefix).channelFence(CH))).toBe(0);
  // The old holder's lease vanished with the keys: the next acquirer takes it at once.
  const third = await leases.acquire(CH);
  expect(third.fence).toBeGreaterThan(second.fence);
  await vi.waitFor(() => expect(second.lost.aborted).toBe(true), WAIT);
  await Promise.all([second.release(), third.release()]);
});

it('gives a greater fence after a real Redis restarted empty, and tells the old holder', async () => {
  const server = await DisposableRedis.start();
  closers.push(() => server.kill());
  const prefix = randomPrefix();
  const { leases } = await replica(prefix, { url: server.url, ttlMs: 600 });
  const before = await leases.acquire(CH);
  await server.kill();
  await server.restart();
  const [error] = await once(before.lost, 'abort').then(() => [before.lost.reason]);
  expect(error).toBeInstanceOf(ChannelLeaseLostError);
  let after: ChannelLease | undefined;
  await vi.waitFor(async () => {
    after = await leases.acquire(CH);
  }, WAIT);
  expect(after?.fence).toBeGreaterThan(before.fence);
  await after?.release();
});

it('frees the channel for the next waiter when the holder dies (stops renewing)', async () => {
  const prefix = await freshPrefix();
  const [dying, next] = await Promise.all([replica(prefix, { ttlMs: 600 }), replica(prefix, { ttlMs: 600 })]);
  const held = await dying.leases.acquire(CH);
  const waiting = track(next.leases.acquire(CH));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(1), WAIT);
  dying.kill();
  await vi.waitFor(() => expect(waiting.settled).toBe(true), WAIT);
  expect(waiting.error).toBeUndefined();
  expect((waiting.value as ChannelLease).fence).toBeGreaterThan(held.fence);
  // The dead holder, had it only stalled, would learn that its lease could not be confirmed.
  await vi.waitFor(() => expect(held.lost.aborted).toBe(true), WAIT);
  expect(held.lost.reason).toMatchObject({ code: 'channel_lease_lost', loss: 'unconfirmed' });
  await (waiting.value as ChannelLease).release();
});

it('does not let a dead waiter block the queue', async () => {
  const prefix = await freshPrefix();
  const [holderReplica, dead, alive] = await Promise.all(
    [0, 1, 2].map(() => replica(prefix, { ttlMs: 600 })),
  );
  const holder = await holderReplica?.leases.acquire(CH);
  const deadWait = track(dead?.leases.acquire(CH) ?? Promise.reject(new Error('no replica')));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(1), WAIT);
  const aliveWait = track(alive?.leases.acquire(CH) ?? Promise.reject(new Error('no replica')));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(2), WAIT);
  // The head waiter's replica dies: its entry stays until its time runs out.
  dead?.kill();
  await vi.waitFor(() => expect(deadWait.settled).toBe(true), WAIT);
  expect(deadWait.error).toBeInstanceOf(RedisUnavailableError);
  expect(await queueLength(prefix)).toBe(2);
  await holder?.release();
  await vi.waitFor(() => expect(aliveWait.settled).toBe(true), WAIT);
  expect(aliveWait.error).toBeUndefined();
  expect(await queueLength(prefix)).toBe(0);
  await (aliveWait.value as ChannelLease).release();
});

it('drops a queued entry without a drop time (the other set evicted on its own)', async () => {
  const prefix = await freshPrefix();
  const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
  const holder = await a.leases.acquire(CH);
  const queue = redisKeys(prefix).channelLeaseQueue(CH);
  await admin.zadd(queue, '1', 'ghost');
  const waiting = track(b.leases.acquire(CH));
  await vi.waitFor(async () => {
    const tokens = await admin.zrange(queue, '0', '-1');
    expect(tokens).toHaveLength(1);
    expect(tokens).not.toContain('ghost');
  }, WAIT);
  await holder.release();
  await vi.waitFor(() => expect(waiting.settled).toBe(true), WAIT);
  expect(waiting.error).toBeUndefined();
  await (waiting.value as ChannelLease).release();
});

it('takes an aborted waiter out of the queue, and the one behind it goes next', async () => {
  const prefix = await freshPrefix();
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => replica(prefix)));
  const holder = await a?.leases.acquire(CH);
  const stop = new AbortController();
  const aborted = track(b?.leases.acquire(CH, stop.signal) ?? Promise.reject(new Error('no replica')));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(1), WAIT);
  const behind = track(c?.leases.acquire(CH) ?? Promise.reject(new Error('no replica')));
  await vi.waitFor(async () => expect(await queueLength(prefix)).toBe(2), WAIT);
  stop.abort();
  await vi.waitFor(() => expect(aborted.settled).toBe(true), WAIT);
  expect(aborted.error).toMatchObject({ name: 'AbortError' });
  expect(await queueLength(prefix)).toBe(1);
  await holder?.release();
  await vi.waitFor(() => expect(behind.settled).toBe(true), WAIT);
  expect(behind.error).toBeUndefined();
  await (behind.value as ChannelLease).release();
  // An already aborted signal never asks.
  await expect(b?.leases.acquire(CH, AbortSignal.abort())).rejects.toMatchObject({ name: 'AbortError' });
});

it('tells a holder whose lease was taken over, and its release leaves the new holder alone', async () => {
  const prefix = await freshPrefix();
  const [a, b] = await Promise.all([replica(prefix, { ttlMs: 300 }), replica(prefix, { ttlMs: 300 })]);
  const stalled = await a.leases.acquire(CH);
  // Its TTL ran out while it stalled, and another replica's turn took the channel.
  await admin.del(redisKeys(prefix).channelLease(CH));
  const current = await b.leases.acquire(CH);
  await once(stalled.lost, 'abort');
  expect(stalled.lost.reason).toBeInstanceOf(ChannelLeaseLostError);
  expect(stalled.lost.reason).toMatchObject({ loss: 'taken', channelKey: CH });
  expect(current.fence).toBeGreaterThan(stalled.fence);
  await stalled.release();
  expect(await admin.get(redisKeys(prefix).channelLease(CH))).toMatch(new RegExp(`:${current.fence}$`));
  expect(current.lost.aborted).toBe(false);
  await current.release();
});

it('throws when Redis is away, so the caller falls back to its own order', async () => {
  const prefix = await freshPrefix();
  const away = createRedis('redis://127.0.0.1:1', { role: 'producer' });
  const awaySubscriber = createRedis('redis://127.0.0.1:1', { role: 'subscriber' });
  closers.push(async () => {
    away.disconnect();
    awaySubscriber.disconnect();
  });
  const unreachable = new RedisChannelLeases({ connection: away, subscriber: awaySubscriber, prefix });
  await expect(unreachable.acquire(CH)).rejects.toBeInstanceOf(RedisUnavailableError);

  const gone = await replica(prefix);
  gone.kill();
  await expect(gone.leases.acquire(CH)).rejects.toBeInstanceOf(RedisUnavailableError);
});
