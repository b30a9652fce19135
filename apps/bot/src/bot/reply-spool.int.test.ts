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
import type { ChatModel, InboundMessage } from '@ebb/core';
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

it('archives a reply spooled while Postgres was away before the channel’s next message', async () => {
  const pg = await postgresBehindProxy();
  closers.push(() => pg.close());
  const channels = new PgChannelStore({ db: pg.fresh.db });
  const dir = await mkdtemp(join(tmpdir(), 'ebb-reply-spool-'));
  closers.push(() => rm(dir, { recursive: true, force: true }));

  let calls = 0;
  // Postgres goes away while the model writes the first reply.
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
    memories: new InMemoryMemoryStore(),
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
  const say = (i: number) => bot.handlers().onMessage(said(i));

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
