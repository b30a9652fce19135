/**
 * A channel's turns one at a time across replicas, on the real bot, Postgres and Redis: two `Bot`s
 * on one store, each with its own `RedisChannelLeases` (as two `ebb start` have). A message given to
 * the second replica while the first is inside a turn of the channel is stored after that turn's
 * reply; a holder whose lease passed on cannot write; with Redis away, turns go on unleased.
 */
import { randomUUID } from 'node:crypto';
import { parseConfig } from '@ebb/config';
import {
  type ChannelLeases,
  type ChatMessage,
  type ChatModel,
  FencedAppendError,
  type InboundMessage,
  type TurnResult,
} from '@ebb/core';
import { InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { PgChannelStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import {
  createRedis,
  InlineCompactionQueue,
  InProcessContextNotifier,
  RedisChannelLeases,
  redisKeys,
  waitForReady,
} from '@ebb/queue';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { expect, it, vi } from 'vitest';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';

const KEY = 'web:leased';
const closers = closersAfterEach();

/** Answers `answer to <text>`; the first call waits for `open` (a model that takes its time). */
class HeldModel implements ChatModel {
  readonly label = 'held';
  readonly prompts: ChatMessage[][] = [];
  open = () => {};
  readonly #held = new Promise<void>((resolve) => {
    this.open = resolve;
  });
  #entered = () => {};
  readonly entered = new Promise<void>((resolve) => {
    this.#entered = resolve;
  });

  async reply(messages: readonly ChatMessage[]) {
    this.prompts.push([...messages]);
    if (this.prompts.length === 1) {
      this.#entered();
      await this.#held;
    }
    const last = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
    return { text: `answer to ${last.slice(last.indexOf('question'))}` };
  }
}

const said = (id: string): InboundMessage => ({
  platform: 'web',
  channelKey: KEY,
  platformMessageId: id,
  authorId: 'ana',
  authorName: 'ana',
  fromBot: false,
  text: `question ${id}`,
  ts: new Date().toISOString(),
  mentionsBot: false,
  direct: true,
  reportsFailure: true,
});

async function world() {
  const fresh: FreshSchemaDb = await freshSchemaDb();
  closers.push(() => fresh.close());
  const prefix = randomPrefix();
  closers.push(() => dropPrefix(prefix));
  return { fresh, prefix };
}

/** A replica's leases: its own two connections, as `ebb start` opens them. */
async function leasesOn(prefix: string): Promise<RedisChannelLeases> {
  const connection = createRedis(redisUrl(), { role: 'producer' });
  const subscriber = createRedis(redisUrl(), { role: 'subscriber' });
  closers.push(async () => {
    connection.disconnect();
    subscriber.disconnect();
  });
  await waitForReady(connection);
  const leases = new RedisChannelLeases({ connection, subscriber, prefix });
  closers.push(() => leases.close());
  return leases;
}

async function startBot(fresh: FreshSchemaDb, model: ChatModel, leases?: ChannelLeases) {
  const web = new RecordingPlatform('web', `out-${randomUUID()}`);
  const logger = new RecordingLogger();
  const bot = new Bot({
    config: () => parseConfig('', 'leases.toml'),
    channels: new PgChannelStore({ db: fresh.db }),
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => model,
    logger,
    ...(leases === undefined ? {} : { leases }),
  });
  await bot.start([web]);
  closers.push(() => bot.stop());
  return { say: (m: InboundMessage) => bot.handlers().onMessage(m) as Promise<TurnResult>, web, logger };
}

async function archived(fresh: FreshSchemaDb): Promise<string[]> {
  const channels = new PgChannelStore({ db: fresh.db });
  const { headSeq } = await channels.loadPrefix(KEY);
  return (await channels.readArchive(KEY, 1, headSeq)).map((m) => `${m.role}: ${m.text}`);
}

it("stores a message another replica took during a turn after that turn's reply, and answers it from there", async () => {
  const { fresh, prefix } = await world();
  const redis = createRedis(redisUrl(), { role: 'producer' });
  closers.push(async () => redis.disconnect());
  const model = new HeldModel();
  const a = await startBot(fresh, model, await leasesOn(prefix));
  const b = await startBot(fresh, model, await leasesOn(prefix));

  const first = a.say(said('m1'));
  await model.entered;
  const second = b.say(said('m2'));
  // m2's replica waits in the channel's queue; m2 is not in the archive while m1's turn runs.
  const queue = redisKeys(prefix).channelLeaseQueue(KEY);
  await vi.waitFor(async () => expect(await redis.zcard(queue)).toBe(1), { timeout: 10_000, interval: 20 });
  expect(await archived(fresh)).toEqual(['user: question m1']);
  model.open();

  expect(await first).toMatchObject({ reply: 'answer to question m1', archived: 'stored' });
  expect(await second).toMatchObject({ reply: 'answer to question m2', archived: 'stored' });
  expect(await archived(fresh)).toEqual([
    'user: question m1',
    'assistant: answer to question m1',
    'user: question m2',
    'assistant: answer to question m2',
  ]);
  // m2's prompt held m1's whole turn: the second replica's cache followed the first's appends.
  expect(JSON.stringify(model.prompts[1])).toContain('answer to question m1');
}, 30_000);

it('refuses the appends of a holder whose lease passed on', async () => {
  const { fresh, prefix } = await world();
  const leases = await leasesOn(prefix);
  const stalled = await leases.acquire(KEY);
  // The holder stalls past its lease (its renewals stop reaching Redis), and another takes it.
  await stalled.release();
  const next = await leases.acquire(KEY);
  const channels = new PgChannelStore({ db: fresh.db });
  const message = { role: 'user' as const, author: 'ana', text: 'hi', tokens: 3, contextTokens: 3 };
  await channels.append(KEY, message, { fence: next.fence });
  await expect(channels.append(KEY, message, { fence: stalled.fence })).rejects.toBeInstanceOf(
    FencedAppendError,
  );
  await next.release();
  expect(await archived(fresh)).toEqual(['user: hi']);
}, 30_000);

it('answers unleased, logged once, while Redis cannot be asked for the lease', async () => {
  const { fresh, prefix } = await world();
  const connection = createRedis(redisUrl(), { role: 'producer' });
  const subscriber = createRedis(redisUrl(), { role: 'subscriber' });
  await waitForReady(connection);
  const leases = new RedisChannelLeases({ connection, subscriber, prefix });
  const model = new HeldModel();
  model.open();
  const { say, logger } = await startBot(fresh, model, leases);
  connection.disconnect();
  subscriber.disconnect();

  expect(await say(said('m1'))).toMatchObject({ reply: 'answer to question m1', archived: 'stored' });
  expect(await say(said('m2'))).toMatchObject({ reply: 'answer to question m2', archived: 'stored' });
  expect(logger.events('turn.lease_unavailable')).toHaveLength(1);
}, 30_000);
