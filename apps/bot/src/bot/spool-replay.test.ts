/**
 * A spool left by a previous process (or another replica): the bot finds it on its replay timer and
 * archives it in order before the channel's next message, with no message needed to start it; and a
 * message that arrives before the timer has listed the spool still goes in behind it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@ebb/config';
import type { InboundSpool } from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { createLogger } from '@ebb/logger';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { afterEach, expect, it, vi } from 'vitest';
import { Bot } from './bot.js';
import { FileInboundSpool } from './file-inbound-spool.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function leftBehind(key: string): Promise<FileInboundSpool> {
  const dir = await mkdtemp(join(tmpdir(), 'ebb-replay-'));
  dirs.push(dir);
  const spool = new FileInboundSpool(join(dir, 'spool.jsonl'));
  for (let i = 0; i < 3; i++) {
    await spool.push({
      channelKey: key,
      role: 'user',
      author: 'ana',
      text: `left behind ${i}`,
      ts: `2026-11-24T10:00:0${i}.000Z`,
      platformMessageId: `p${i}`,
    });
  }
  // What the next process reads: the file, not this object's memory.
  return new FileInboundSpool(join(dir, 'spool.jsonl'));
}

function botWith(spool: InboundSpool, channels: InMemoryChannelStore, spoolReplayMs: number): Bot {
  return new Bot({
    config: () => parseConfig('', 'replay-test.toml'),
    channels,
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => ({ label: 'unused', reply: async () => ({ text: 'unused' }) }),
    logger: createLogger({ level: 'silent' }),
    spool,
    spoolReplayMs,
  });
}

it('replays a spool it did not write, in order, on its timer', async () => {
  const key = 'discord:G1:C1';
  const spool = await leftBehind(key);
  const channels = new InMemoryChannelStore();
  const bot = botWith(spool, channels, 20);
  await bot.start([]);
  try {
    await vi.waitFor(async () => expect(await spool.channels()).toEqual([]));
    expect((await channels.loadContext(key)).raw.map((m) => m.text)).toEqual([
      'left behind 0',
      'left behind 1',
      'left behind 2',
    ]);
  } finally {
    await bot.stop();
  }
});

it('archives a message that arrives before the timer has listed the spool behind what the spool holds', async () => {
  const key = 'discord:G1:C1';
  const spool = await leftBehind(key);
  const channels = new InMemoryChannelStore();
  // The timer does not come round during the test: the turn alone must find the spool.
  const bot = botWith(spool, channels, 3_600_000);
  await bot.start([]);
  try {
    const result = await bot.handlers().onMessage({
      platform: 'discord',
      channelKey: key,
      platformMessageId: 'p3',
      authorId: 'u1',
      authorName: 'ana',
      fromBot: false,
      text: 'just after the restart',
      ts: '2026-11-24T10:05:00.000Z',
      mentionsBot: false,
      direct: false,
    });
    expect(result?.archived).toBe('stored');
    expect((await channels.loadContext(key)).raw.map((m) => m.text)).toEqual([
      'left behind 0',
      'left behind 1',
      'left behind 2',
      'just after the restart',
    ]);
    expect(await spool.channels()).toEqual([]);
  } finally {
    await bot.stop();
  }
});
