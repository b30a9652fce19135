/** Replicas' appends over real Redis pub/sub: heard by the others, not by the sender, and never trusted blindly. */
import type { ContextDelta, ContextMessage } from '@ebb/core';
import { randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_APPEND_NOTICE_BYTES, RedisAppendFeed } from './redis-append-feed.js';
import { closeRedis, createRedis, waitForReady } from './redis-connection.js';
import { redisKeys } from './redis-keys.js';

const WAIT = { timeout: 10_000, interval: 10 };

const appended = (seq: number, text = `m${seq}`): ContextDelta => ({
  generation: 2,
  headSeq: seq,
  tokens: 100 + seq,
  raw: [{ seq, role: 'user', author: 'ana', text, ts: '2026-12-03T10:00:00Z', tokens: 9 }],
});

describe('RedisAppendFeed', () => {
  const opened: Redis[] = [];
  const feeds: RedisAppendFeed[] = [];
  const prefix = randomPrefix();
  afterEach(async () => {
    // Pub/sub leaves no key behind to clean up.
    await Promise.all(feeds.splice(0).map((feed) => feed.close()));
    await Promise.all(opened.splice(0).map((redis) => closeRedis(redis)));
  });

  async function replica(logger = new RecordingLogger()) {
    const publisher = createRedis(redisUrl(), { role: 'producer' });
    const subscriber = createRedis(redisUrl(), { role: 'subscriber' });
    opened.push(publisher, subscriber);
    await waitForReady(publisher);
    const feed = new RedisAppendFeed({ publisher, subscriber, prefix, logger });
    feeds.push(feed);
    const heard: { key: string; appended: ContextDelta }[] = [];
    await feed.subscribe((key, delta) => heard.push({ key, appended: delta }));
    return { feed, heard, publisher, logger };
  }

  it("delivers a replica's appends to the others as sent, and not back to the sender", async () => {
    const a = await replica();
    const b = await replica();
    const c = await replica();
    const step: ContextDelta = {
      generation: 3,
      headSeq: 8,
      tokens: 400,
      raw: [
        {
          seq: 7,
          role: 'assistant',
          author: 'ebb',
          text: '',
          toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{"q":"x"}' }],
          tokens: 20,
        },
        {
          seq: 8,
          role: 'tool',
          author: 'lookup',
          text: 'a long result',
          toolCallId: 'c1',
          tokens: 30,
          stubbed: true,
        },
      ],
    };
    a.feed.publish('slack:T1:C1', appended(6, 'héllo, ünïcode 🌊'));
    a.feed.publish('slack:T1:C1', step);
    await vi.waitFor(() => expect([b.heard.length, c.heard.length]).toEqual([2, 2]), WAIT);
    expect(b.heard).toEqual([
      { key: 'slack:T1:C1', appended: appended(6, 'héllo, ünïcode 🌊') },
      { key: 'slack:T1:C1', appended: step },
    ]);
    expect(c.heard).toEqual(b.heard);
    // What a turn's message carried besides the context's own fields stays home.
    const own = appended(10);
    const carried = { ...own.raw[0], channelKey: 'web:2', platformMessageId: 'p10' } as ContextMessage;
    a.feed.publish('web:2', { ...own, raw: [carried] });
    await vi.waitFor(() => expect(b.heard).toHaveLength(3), WAIT);
    expect(b.heard[2]).toEqual({ key: 'web:2', appended: own });
    // A's own come back on its subscription too, and are dropped: B's next one is the first A hears.
    b.feed.publish('web:1', appended(9));
    await vi.waitFor(() => expect(a.heard).toHaveLength(1), WAIT);
    expect(a.heard).toEqual([{ key: 'web:1', appended: appended(9) }]);
  });

  it('drops a malformed notice, saying so once and without its text, and an oversized one unsent', async () => {
    const a = await replica();
    const b = await replica();
    const raw = createRedis(redisUrl(), { role: 'producer' });
    opened.push(raw);
    await waitForReady(raw);
    const channel = redisKeys(prefix).contextAppended;
    await raw.publish(channel, 'not json: a secret sentence');
    await raw.publish(
      channel,
      JSON.stringify({
        from: 'x',
        channelKey: 'web:1',
        appended: { ...appended(1), raw: [{ text: 'a secret sentence' }] },
      }),
    );
    a.feed.publish('web:1', appended(2, 'x'.repeat(MAX_APPEND_NOTICE_BYTES)));
    a.feed.publish('web:1', appended(3));
    await vi.waitFor(() => expect(b.heard).toHaveLength(1), WAIT);
    expect(b.heard.map((n) => n.appended.headSeq)).toEqual([3]);
    const warned = b.logger.events('context.append_notice_malformed');
    expect(warned).toHaveLength(1);
    expect(warned[0]?.fields.reason).toBe('not JSON');
    expect(JSON.stringify(b.logger.entries)).not.toContain('secret');
  });

  it('drops what it cannot send while Redis is away, without throwing', async () => {
    const a = await replica();
    const b = await replica();
    await a.publisher.quit();
    expect(() => a.feed.publish('web:1', appended(1))).not.toThrow();
    // B still hears others; nothing from A arrived.
    const c = await replica();
    c.feed.publish('web:1', appended(2));
    await vi.waitFor(() => expect(b.heard).toHaveLength(1), WAIT);
    expect(b.heard.map((n) => n.appended.headSeq)).toEqual([2]);
  });
});
