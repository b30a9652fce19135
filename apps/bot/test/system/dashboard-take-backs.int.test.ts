/**
 * A take-back as the dashboard and the web channel's stream show it, end to end: Ebb with Postgres
 * and Redis, the fake OpenAI server as the summarizer (held until the test lets it answer), and a web
 * channel whose messages 1–4 sit under a summary. Deleting message 2 sets that summary aside; until
 * it is written again the channel's detail and its list row say a take-back is pending (read from
 * Postgres, so any process's), and once it is, both event streams say so and the count is gone.
 */
import { loadEnv } from '@ebb/config';
import { toNewMessage } from '@ebb/core';
import { PgChannelStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { EventStreamReader } from '@ebb/testing/event-stream';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import type { DashboardChannelDetail, DashboardChannelList } from '@ebb/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { isPassRequest, passReply, smallWindowConfig } from '../small-window.js';

const KEY = 'web:tb';
const prefix = randomPrefix();
let fake: FakeOpenAiServer;
let fresh: FreshSchemaDb;
let ebb: RunningEbb;
/** Summary requests wait for this until the test lets them answer. */
let release = () => {};
const summaries = new Promise<void>((resolve) => {
  release = resolve;
});

beforeAll(async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  fake = await FakeOpenAiServer.start();
  fake.reply(async (request) => {
    if (!isPassRequest(request)) return { content: 'ack' };
    await summaries;
    return passReply(request, { summary: 'Earlier: builds went out.', memories: [] }) ?? { content: '' };
  });
  fresh = await freshSchemaDb();
  const channels = new PgChannelStore({ db: fresh.db });
  for (let i = 1; i <= 6; i++)
    await channels.append(
      KEY,
      toNewMessage(
        { role: 'user', author: 'ana', text: `build ${i} went out`, platformMessageId: `m${i}` },
        tokenizer,
        100_000,
      ),
    );
  await channels.splice(KEY, {
    jobId: 'seeded',
    fromSeq: 1,
    toSeq: 4,
    text: 'builds 1-4 went out',
    tokens: 8,
  });
  ebb = await startEbb({
    config: () => smallWindowConfig(fake.url),
    env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix, LOG_LEVEL: 'silent' }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
    llmRetry: { attempts: 1, initialDelayMs: 5, maxDelayMs: 10 },
  });
}, 60_000);

afterAll(async () => {
  release();
  await ebb?.close();
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
});

async function read<T>(path: string): Promise<T> {
  const res = await fetch(`${ebb.web.url}${path}`);
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

const detail = () => read<DashboardChannelDetail>(`/api/dashboard/channels/${encodeURIComponent(KEY)}`);
const listed = async () =>
  (await read<DashboardChannelList>('/api/dashboard/channels')).channels.find((c) => c.key === KEY)
    ?.takeBacks;

describe('a take-back on the dashboard', () => {
  it('shows as pending in the channel and its row until complete, then both streams say it completed', async () => {
    const dashboard = await EventStreamReader.open(`${ebb.web.url}/api/dashboard/events`);
    const channel = await EventStreamReader.open(`${ebb.web.url}/api/channels/tb/events`);
    expect((await detail()).takeBacks).toEqual({ pending: 0, oldest: null });

    const res = await fetch(`${ebb.web.url}/api/channels/tb/messages/m2`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { takeBack?: string; pending?: number };
    expect(answer).toMatchObject({ deleted: true, outcome: 'applied', pending: 1 });
    const id = answer.takeBack;
    expect(id).toEqual(expect.any(String));
    // The summary over seq 2 is being written again, and waits for the test.
    await expect.poll(() => fake.completionRequests.some(isPassRequest)).toBe(true);

    const pending = await detail();
    expect(pending.takeBacks).toEqual({
      pending: 1,
      oldest: { kind: 'deleted', createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
    expect(await listed()).toEqual(pending.takeBacks);
    await channel.until('event: deleted');
    expect(channel.events('deleted')).toEqual([
      expect.objectContaining({ platformMessageId: 'm2', takeBack: id, pending: 1 }),
    ]);
    expect(dashboard.events('takeback')).toEqual([]);

    release();
    await dashboard.until('event: takeback');
    // Ids and counts only: no message text.
    expect(dashboard.events('takeback')).toEqual([
      {
        type: 'takeback',
        channel: KEY,
        takeBack: id,
        kind: 'deleted',
        status: 'completed',
        at: expect.any(Number),
      },
    ]);
    await channel.until('event: takeback');
    expect(channel.events('takeback')).toEqual([
      { type: 'takeback', takeBack: id, kind: 'deleted', status: 'completed', pending: 0 },
    ]);
    // Marked completed before the events went out.
    expect((await detail()).takeBacks).toEqual({ pending: 0, oldest: null });
    // The list's read is shared for half a second: the row follows once it is read again.
    await expect.poll(listed, { timeout: 5_000 }).toEqual({ pending: 0, oldest: null });
    expect((await detail()).spans.summaries).toBe(1);
  });
});
