/**
 * A web channel's reply posted while Postgres went away mid-turn, on the real bot and Postgres (cut
 * by a proxy) with the real file spool: the reply is spooled, and once Postgres is back it goes into
 * the archive ahead of the channel's next message, where it was said, not behind whatever came
 * before the replay timer's next round.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '@ebb/config';
import { type ChatModel, type InboundMessage, memoryScope } from '@ebb/core';
import { InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { PgChannelStore } from '@ebb/db';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { expect, it } from 'vitest';
import { postgresBehindProxy } from '../../test/postgres-proxy.js';
import { closersAfterEach, RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';
import { FileInboundSpool } from './file-inbound-spool.js';

const KEY = 'web:reply-spool';

const closers = closersAfterEach();

const said = (i: number): InboundMessage => ({
  platform: 'web',
  channelKey: KEY,
  platformMessageId: `m${i}`,
  authorId: 'ana',
  authorName: 'ana',
  fromBot: false,
  text: `question ${i}`,
  ts: new Date().toISOString(),
  mentionsBot: false,
  direct: true,
  reportsFailure: true,
});

/**
 * The real bot on Postgres behind a proxy, with the file spool; Postgres goes away while the model
 * writes the first reply (`answer 1`), and comes back when the test restores it.
 */
async function cutWhileAnswering(memories = new InMemoryMemoryStore()) {
  const pg = await postgresBehindProxy();
  closers.push(() => pg.close());
  const channels = new PgChannelStore({ db: pg.fresh.db });
  const dir = await mkdtemp(join(tmpdir(), 'ebb-reply-spool-'));
  closers.push(() => rm(dir, { recursive: true, force: true }));

  let calls = 0;
  const model: ChatModel = {
    label: 'cutting',
    reply: async () => {
      calls++;
      if (calls === 1) pg.proxy.cut();
      return { text: `answer ${calls}` };
    },
  };
  const web = new RecordingPlatform('web');
  const bot = new Bot({
    config: () => parseConfig('', 'reply-spool.toml'),
    channels,
    memories,
    runs: new InMemoryRunStore(),
    queue: new InlineCompactionQueue({ processor: async () => undefined }),
    notifier: new InProcessContextNotifier(),
    chatModel: () => model,
    logger: new RecordingLogger(),
    spool: new FileInboundSpool(join(dir, 'spool.jsonl')),
    // The replay timer stays out of it: only the order of turns decides.
    spoolReplayMs: 60_000,
  });
  await bot.start([web]);
  closers.push(() => bot.stop());
  return { pg, channels, web, say: (i: number) => bot.handlers().onMessage(said(i)) };
}

it('archives a reply spooled while Postgres was away before the channel’s next message', async () => {
  const { pg, channels, web, say } = await cutWhileAnswering();

  // Posted, then spooled: the archive could not take it.
  expect(await say(1)).toEqual({ reply: 'answer 1', archived: 'stored' });
  pg.proxy.restore();
  expect(await say(2)).toEqual({ reply: 'answer 2', archived: 'stored' });

  const context = await channels.loadContext(KEY);
  const archive = await channels.readArchive(KEY, 1, context.headSeq);
  expect(archive.map((m) => `${m.role}: ${m.text}`)).toEqual([
    'user: question 1',
    'assistant: answer 1',
    'user: question 2',
    'assistant: answer 2',
  ]);
  expect(web.sent).toEqual(['answer 1', 'answer 2']);
}, 30_000);

it('a spooled reply keeps its provenance: the memory its prompt recalled finds it once archived', async () => {
  const memories = new InMemoryMemoryStore();
  await memories.upsert([
    {
      type: 'fact',
      text: 'question 1 is about the staging deploy',
      importance: 0.9,
      scope: memoryScope(KEY, 'channel'),
      channelKey: KEY,
      fromSeq: 1,
      toSeq: 1,
    },
  ]);
  const [memory] = await memories.list({ channelKey: KEY });
  const { pg, channels, say } = await cutWhileAnswering(memories);

  expect(await say(1)).toMatchObject({ reply: 'answer 1' });
  pg.proxy.restore();
  await say(2);

  // The reply replayed from the spool is seq 2, and a take-back of the memory reaches it.
  const [reply] = await channels.readArchive(KEY, 2, 2);
  expect(reply).toMatchObject({ role: 'assistant', text: 'answer 1' });
  expect(await channels.findRecalling(KEY, [String(memory?.id)])).toContain(2);
}, 30_000);
