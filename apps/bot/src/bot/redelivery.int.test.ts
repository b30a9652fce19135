/**
 * A message whose first turn left no reply, on the real bot and Postgres (and Redis for the claims
 * replicas share): a message stored while its context could not be reloaded is reported stored, not
 * "not archived"; its redelivery (the web API's retry, a replica given it too, a turn that died) is
 * answered, and answered once, however many deliveries meet.
 */
import { randomUUID } from 'node:crypto';
import { parseConfig } from '@ebb/config';
import {
  type AnswerClaims,
  type ChatMessage,
  type ChatModel,
  type InboundMessage,
  type TurnResult,
  toNewMessage,
} from '@ebb/core';
import { InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { PgChannelStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import {
  createRedis,
  InlineCompactionQueue,
  InProcessContextNotifier,
  RedisAnswerClaims,
  redisKeys,
  waitForReady,
} from '@ebb/queue';
import { dropPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';

const KEY = 'web:redelivery';

const closers = closersAfterEach();

/** Answers `answer <n>`; while `gate` is set, each call waits for it (a model that takes its time). */
class GatedModel implements ChatModel {
  readonly label = 'gated';
  calls = 0;
  /** Each call's prompt, as sent. */
  readonly prompts: ChatMessage[][] = [];
  gate: Promise<void> | undefined;
  #entered: (() => void) | undefined;

  /** Resolves when the next call has started. */
  entered(): Promise<void> {
    return new Promise((resolve) => {
      this.#entered = resolve;
    });
  }

  async reply(messages: readonly ChatMessage[]) {
    this.calls++;
    this.prompts.push([...messages]);
    this.#entered?.();
    await this.gate;
    return { text: `answer ${this.calls}` };
  }
}

/** A message of the web API: the sender is told of failures and sends again with the same id. */
const said = (id: string, text = `question ${id}`): InboundMessage => ({
  platform: 'web',
  channelKey: KEY,
  platformMessageId: id,
  authorId: 'ana',
  authorName: 'ana',
  fromBot: false,
  text,
  ts: new Date().toISOString(),
  mentionsBot: false,
  direct: true,
  reportsFailure: true,
});

async function database(): Promise<FreshSchemaDb> {
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());
  return fresh;
}

async function startBot(
  fresh: FreshSchemaDb,
  model: ChatModel,
  claims?: AnswerClaims,
): Promise<{ bot: Bot; web: RecordingPlatform; channels: PgChannelStore }> {
  const web = new RecordingPlatform('web', `out-${randomUUID()}`);
  const channels = new PgChannelStore({ db: fresh.db });
  const bot = new Bot({
    config: () => parseConfig('', 'redelivery.toml'),
    channels,
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => model,
    logger: new RecordingLogger(),
    ...(claims === undefined ? {} : { claims }),
  });
  await bot.start([web]);
  closers.push(() => bot.stop());
  return { bot, web, channels };
}

/** Claims on the real Redis, under a prefix of this test's own. */
async function claimsOnRedis(ttlMs?: number) {
  const prefix = randomPrefix();
  const redis = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(redis);
  closers.push(async () => {
    redis.disconnect();
    await dropPrefix(prefix);
  });
  return {
    redis,
    keys: redisKeys(prefix),
    claims: () => new RedisAnswerClaims({ connection: redis, prefix, ...(ttlMs ? { ttlMs } : {}) }),
  };
}

/** The archive's messages, as `role: text`. */
async function archived(channels: PgChannelStore): Promise<string[]> {
  const context = await channels.loadContext(KEY);
  return (await channels.readArchive(KEY, 1, context.headSeq)).map((m) => `${m.role}: ${m.text}`);
}

/** Stores a message as a turn that died right after storing it would have. */
async function storedUnanswered(channels: PgChannelStore, message: InboundMessage): Promise<void> {
  const tokenizer = await loadTokenizer('o200k_base');
  const stored = await channels.append(
    KEY,
    toNewMessage(
      {
        role: 'user',
        author: message.authorName,
        text: message.text,
        ts: message.ts,
        platformMessageId: message.platformMessageId,
      },
      tokenizer,
      1_000,
    ),
  );
  expect(stored.inserted).toBe(true);
}

it('reports a message stored when only the context reload after it failed, and answers its retry', async () => {
  const fresh = await database();
  const model = new GatedModel();
  const { bot, web, channels } = await startBot(fresh, model);
  const say = (m: InboundMessage) => bot.handlers().onMessage(m) as Promise<TurnResult>;
  expect(await say(said('m1'))).toMatchObject({ reply: 'answer 1', archived: 'stored' });

  // Another process writes to the channel and changes its context (a generation past the cache's,
  // as a splice leaves it), so the bot's next append must reload the context, not only read the
  // messages after its head; and the reload cannot read the channel's spans (the append itself
  // never touches them).
  await channels.append(KEY, { ...(await systemNote()), platformMessageId: 'other-1' });
  await fresh.db.execute(
    sql.raw(`update ${fresh.schema}.channels set generation = generation + 1 where key = '${KEY}'`),
  );
  await fresh.db.execute(sql.raw(`alter table ${fresh.schema}.context_spans rename to context_spans_away`));
  const first = await say(said('m2'));
  await fresh.db.execute(sql.raw(`alter table ${fresh.schema}.context_spans_away rename to context_spans`));
  expect(first).toEqual({ reply: null, archived: 'stored', failedAfterStore: true });

  // The sender tries again: the message is there, unanswered, so this delivery answers it.
  expect(await say(said('m2'))).toEqual({
    reply: 'answer 2',
    archived: 'duplicate',
    original: { text: 'question m2', reply: 'answer 2' },
  });
  // Once answered, a further retry gets that reply back and the model is not asked again.
  expect(await say(said('m2'))).toEqual({
    reply: null,
    archived: 'duplicate',
    original: { text: 'question m2', reply: 'answer 2' },
  });
  expect(model.calls).toBe(2);
  expect(web.sent).toEqual(['answer 1', 'answer 2']);
  expect(await archived(channels)).toEqual([
    'user: question m1',
    'assistant: answer 1',
    'user: a note from another process',
    'user: question m2',
    'assistant: answer 2',
  ]);
}, 30_000);

it('answers one message once when two replicas get it at once: the second waits and returns the reply', async () => {
  const fresh = await database();
  const redis = await claimsOnRedis();
  const model = new GatedModel();
  let open = () => {};
  model.gate = new Promise((resolve) => {
    open = resolve;
  });
  const a = await startBot(fresh, model, redis.claims());
  let refused = () => {};
  const waiting = new Promise<void>((resolve) => {
    refused = resolve;
  });
  const claims = redis.claims();
  // The second replica's claims, watched: a refusal is a try while the first replica answers.
  const b = await startBot(fresh, model, {
    claim: async (channelKey, id) => {
      const claim = await claims.claim(channelKey, id);
      if (!claim) refused();
      return claim;
    },
  });

  const entered = model.entered();
  const first = a.bot.handlers().onMessage(said('m1')) as Promise<TurnResult>;
  await entered;
  const second = b.bot.handlers().onMessage(said('m1')) as Promise<TurnResult>;
  // The second delivery either ends (the old way: a duplicate without a reply) or waits its turn.
  await Promise.race([second, waiting]);
  open();

  expect(await first).toEqual({ reply: 'answer 1', archived: 'stored' });
  expect(await second).toEqual({
    reply: null,
    archived: 'duplicate',
    original: { text: 'question m1', reply: 'answer 1' },
  });
  expect(model.calls).toBe(1);
  expect([...a.web.sent, ...b.web.sent]).toEqual(['answer 1']);
  expect(await archived(a.channels)).toEqual(['user: question m1', 'assistant: answer 1']);
}, 30_000);

it('answers a message whose turn died holding its claim, once the claim expires', async () => {
  const fresh = await database();
  const redis = await claimsOnRedis(300);
  const model = new GatedModel();
  const { bot, web, channels } = await startBot(fresh, model, redis.claims());
  // A replica stored m1, claimed it and was killed: nobody renews or releases its claim.
  await storedUnanswered(channels, said('m1'));
  await redis.redis.set(redis.keys.answerClaim(KEY, 'm1'), 'killed-replica', 'PX', 300);

  expect(await bot.handlers().onMessage(said('m1'))).toEqual({
    reply: 'answer 1',
    archived: 'duplicate',
    original: { text: 'question m1', reply: 'answer 1' },
  });
  expect(web.sent).toEqual(['answer 1']);
  expect(await archived(channels)).toEqual(['user: question m1', 'assistant: answer 1']);
}, 30_000);

it('answers a late redelivery from a prompt pinned to its message, not to what came after it', async () => {
  const fresh = await database();
  const model = new GatedModel();
  const { bot, channels } = await startBot(fresh, model);
  // A replica stored m1 and died; another replica archived a message after it.
  await storedUnanswered(channels, said('m1'));
  await channels.append(KEY, { ...(await systemNote()), platformMessageId: 'other-1' });

  expect(await bot.handlers().onMessage(said('m1'))).toMatchObject({ reply: 'answer 1' });
  const prompt = model.prompts[0] ?? [];
  expect(prompt.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('question m1') });
  expect(JSON.stringify(prompt)).not.toContain('a note from another process');
  // The archive keeps both, and the reply after them.
  expect(await archived(channels)).toEqual([
    'user: question m1',
    'user: a note from another process',
    'assistant: answer 1',
  ]);
}, 30_000);

/** A message another process appends (not through this bot). */
async function systemNote() {
  const tokenizer = await loadTokenizer('o200k_base');
  return toNewMessage({ role: 'user', author: 'bo', text: 'a note from another process' }, tokenizer, 1_000);
}
