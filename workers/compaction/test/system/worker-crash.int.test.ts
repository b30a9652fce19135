/**
 * `ebb worker` killed with SIGKILL in the middle of a pass: its job's lock expires, another worker takes
 * the stalled job over and completes it, and nothing is duplicated (one summary span, one memory).
 */
import { runCompactionWorker } from '@ebb/compaction';
import { compactorSettingsFor, FAST_RETRY, pipelineConfig, pipelineToml } from '@ebb/compaction/test-support';
import { resolveChannel } from '@ebb/config';
import {
  ChannelCompactor,
  chatMessageTokens,
  measureMessage,
  TRUNCATION_MARKER,
  UNCALIBRATED,
} from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, redisKeys, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { type SpawnedWorker, spawnEbbWorker } from '../spawn-ebb-worker.js';

const CHANNEL = 'discord:G1:C1';

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
const prefix = randomPrefix();
const producer = createRedis(redisUrl(), { role: 'producer' });
let killed: SpawnedWorker | undefined;

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(() => ({
    json: {
      summary: 'Bo will rotate the on-call keys on Monday.',
      memories: [
        {
          type: 'task',
          text: 'Bo rotates the on-call keys on Monday',
          importance: 0.7,
          speaker: 'bo',
          fromSeq: 2,
          toSeq: 2,
        },
      ],
    },
  }));
  fresh = await freshSchemaDb();
  await waitForReady(producer);
});

afterAll(async () => {
  killed?.child.kill('SIGKILL');
  await cleanupPrefix(producer, prefix);
  await producer.quit();
  await fresh.close();
  await fake.close();
});

it('a job whose worker was killed mid-pass is completed by another worker, with nothing duplicated', async () => {
  // The first LLM call hangs long enough for the kill.
  fake.fail({ kind: 'slow', delayMs: 20_000 }, { times: 1 });
  killed = await spawnEbbWorker({
    databaseUrl: fresh.url,
    prefix,
    configToml: pipelineToml(fake.url),
  });

  // The bot side: chat until a pass is enqueued.
  const config = pipelineConfig(fake.url);
  const channel = resolveChannel(config, CHANNEL);
  const tokenizer = await loadTokenizer(channel.llm.encoding);
  const channels = new PgChannelStore({ db: fresh.db });
  const runs = new PgRunStore({ db: fresh.db });
  const memories = new PgMemoryStore({ db: fresh.db });
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  const compactor = new ChannelCompactor({
    channels,
    runs,
    queue,
    markerTokens: chatMessageTokens(tokenizer, TRUNCATION_MARKER),
  });
  const settings = compactorSettingsFor(channel, tokenizer);
  let jobId: string | undefined;
  for (let i = 0; i < 400 && !jobId; i++) {
    const { entry, archivedTokens } = measureMessage(
      {
        seq: 0,
        role: 'user',
        author: i % 2 ? 'ana' : 'bo',
        text: `update ${i}: rotating keys for service ${i}, ticket SEC-${i}`,
      },
      tokenizer,
      channel.compaction.messageMaxTokens,
    );
    await channels.append(CHANNEL, {
      ...entry,
      tokens: archivedTokens,
      contextTokens: entry.tokens,
      platformMessageId: `d${i}`,
    });
    jobId = (await compactor.afterTurn(CHANNEL, await channels.loadContext(CHANNEL), settings, UNCALIBRATED))
      .jobId;
  }
  expect(jobId).toBeDefined();

  // The child is inside the LLM call: kill it without a chance to clean up.
  await vi.waitFor(() => expect(fake.completionRequests.length).toBe(1), { timeout: 15_000 });
  await vi.waitFor(async () => expect((await runs.get(jobId as string))?.status).toBe('running'));
  killed.child.kill('SIGKILL');
  await killed.exited;
  // Its lock on the job, and the mark that holds off other workers' stalled checks, would run out
  // in BullMQ's 30 s (lockDuration, stalledInterval); as if that time had passed, they run out now
  // (BullMQ's own keys under the prefix, as redis-keys.ts names them).
  const keys = redisKeys(prefix);
  expect(await producer.pexpire(keys.compactionJobLock(jobId as string), 1)).toBe(1);
  expect(await producer.pexpire(keys.compactionStalledCheck, 1)).toBe(1);

  // A second worker finds the stalled job once its lock runs out, and completes it.
  const second = await runCompactionWorker({
    config: () => config,
    env: { OPENAI_API_KEY: 'test-key' },
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger: createLogger({ level: 'silent' }),
    lockDuration: 1_000,
    stalledInterval: 500,
    retry: FAST_RETRY,
  });
  try {
    const run = await vi.waitFor(
      async () => {
        const r = await runs.get(jobId as string);
        if (r?.status !== 'completed') throw new Error(`run is ${r?.status}`);
        return r;
      },
      { timeout: 20_000, interval: 50 },
    );
    expect(run.attempts).toBe(2);
    const context = await channels.loadContext(CHANNEL);
    expect(context.spans.filter((s) => s.kind === 'summary' && s.jobId === jobId)).toHaveLength(1);
    expect(context.spans).toHaveLength(1);
    expect(await memories.list({ channelKey: CHANNEL })).toHaveLength(1);
    expect(fake.completionRequests).toHaveLength(2);
    expect(await channels.readArchive(CHANNEL, 1, context.headSeq)).toHaveLength(context.headSeq);
  } finally {
    await second.close(5_000);
    await queue.close();
  }
});
