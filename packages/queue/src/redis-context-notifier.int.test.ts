import type { ContextNotifier } from '@ebb/core';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRedis, waitForReady } from './redis-connection.js';
import {
  type ContextChange,
  InProcessContextNotifier,
  RedisContextNotifier,
} from './redis-context-notifier.js';
import { redisKeys } from './redis-keys.js';

const WAIT = { timeout: 10_000, interval: 10 };

interface Pair {
  /** The side that changes contexts (a worker). */
  readonly publisher: ContextNotifier;
  /** The side that listens (a bot). */
  readonly subscriber: ContextNotifier;
  /** Sends a raw message on the channel, when the transport has one. */
  readonly raw?: (message: string) => Promise<unknown>;
}

function notifierContract(name: string, make: () => Promise<Pair & { close(): Promise<void> }>) {
  describe(`${name}: ContextNotifier contract`, () => {
    let pair: (Pair & { close(): Promise<void> }) | undefined;
    afterEach(async () => {
      await pair?.close();
      pair = undefined;
    });

    it('delivers {channelKey, generation} to every subscriber until it unsubscribes', async () => {
      pair = await make();
      const a: ContextChange[] = [];
      const b: ContextChange[] = [];
      const stopA = await pair.subscriber.subscribe((c) => a.push(c));
      await pair.subscriber.subscribe((c) => b.push(c));
      await pair.publisher.publish({ channelKey: 'slack:T1:C1', generation: 7 });
      await vi.waitFor(() => expect(b).toHaveLength(1), WAIT);
      expect(a).toEqual([{ channelKey: 'slack:T1:C1', generation: 7 }]);
      expect(b).toEqual(a);

      await stopA();
      await pair.publisher.publish({ channelKey: 'discord:1:2', generation: 8 });
      await vi.waitFor(() => expect(b).toHaveLength(2), WAIT);
      expect(a).toHaveLength(1);
      expect(b[1]).toEqual({ channelKey: 'discord:1:2', generation: 8 });
    });

    it('keeps delivering when a listener throws, and refuses a malformed change', async () => {
      pair = await make();
      const seen: ContextChange[] = [];
      await pair.subscriber.subscribe(() => {
        throw new Error('listener bug');
      });
      await pair.subscriber.subscribe((c) => seen.push(c));
      await expect(pair.publisher.publish({ channelKey: '', generation: 1 })).rejects.toThrow();
      if (pair.raw) await pair.raw('{"channelKey":"x","generation":"one","text":"secret"}');
      await pair.publisher.publish({ channelKey: 'web:1', generation: 1 });
      await pair.publisher.publish({ channelKey: 'web:1', generation: 2 });
      await vi.waitFor(() => expect(seen).toHaveLength(2), WAIT);
      expect(seen.map((c) => c.generation)).toEqual([1, 2]);
    });
  });
}

notifierContract('InProcessContextNotifier', async () => {
  const notifier = new InProcessContextNotifier();
  return { publisher: notifier, subscriber: notifier, close: async () => {} };
});

notifierContract('RedisContextNotifier', async () => {
  const prefix = randomPrefix();
  const bot = RedisContextNotifier.connect(redisUrl(), { prefix });
  const worker = RedisContextNotifier.connect(redisUrl(), { prefix });
  const admin = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(admin);
  // The worker side publishes only; wait until its publisher connection is up.
  await vi.waitFor(() => worker.publish({ channelKey: 'warmup', generation: 0 }), WAIT);
  return {
    publisher: worker,
    subscriber: bot,
    raw: (message) => admin.publish(redisKeys(prefix).contextChanged, message),
    close: async () => {
      await Promise.all([bot.close(), worker.close()]);
      await cleanupPrefix(admin, prefix);
      await admin.quit();
    },
  };
});

describe('RedisContextNotifier', () => {
  it('does not hear another prefix', async () => {
    const mine = RedisContextNotifier.connect(redisUrl(), { prefix: randomPrefix() });
    const theirs = RedisContextNotifier.connect(redisUrl(), { prefix: randomPrefix() });
    try {
      const heard: ContextChange[] = [];
      const own: ContextChange[] = [];
      await mine.subscribe((c) => heard.push(c));
      await theirs.subscribe((c) => own.push(c));
      await vi.waitFor(() => theirs.publish({ channelKey: 'web:1', generation: 3 }), WAIT);
      await vi.waitFor(() => expect(own).toHaveLength(1), WAIT);
      await vi.waitFor(() => mine.publish({ channelKey: 'web:2', generation: 4 }), WAIT);
      await vi.waitFor(() => expect(heard).toHaveLength(1), WAIT);
      expect(heard).toEqual([{ channelKey: 'web:2', generation: 4 }]);
      expect(own).toEqual([{ channelKey: 'web:1', generation: 3 }]);
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
    }
  });
});
