/**
 * The bot's turn, without the model: append the message, recall memories, render the prompt, post,
 * append the reply, run the monitor, all on the real Postgres and Redis with a worker in process.
 * The model is an in-process stand-in that answers at once, so what is timed is Ebb's own work.
 * - p50/p99 per turn with 1k and 100k tokens of context (target p99 < 20 ms);
 * - the same while a compaction pass of that channel is in flight (its LLM call held open);
 * - 1,000 active channels served by one process: turns per second and resident memory.
 */

import { runCompactionWorker } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import type { ChatModel, InboundMessage, PlatformHandlers } from '@ebb/core';
import { measureMessage } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { freshSchemaDb } from '@ebb/testing/postgres';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { Bot } from '../apps/bot/src/bot/bot.js';
import { median, NullPlatform, nowMs, percentile, table } from './support.js';

/** Answers at once: the model call is not part of the turn overhead. */
const instantModel: ChatModel = { label: 'instant', reply: async () => ({ text: 'ok, noted.' }) };

export async function turnBench(): Promise<string> {
  const fake = await FakeOpenAiServer.start();
  // Summary requests are held open for a minute: a pass stays in flight while turns are timed.
  fake.reply(async () => {
    await new Promise((r) => setTimeout(r, 60_000));
    return { json: { summary: 'held', memories: [] } };
  });
  const fresh = await freshSchemaDb({ poolSize: 20 });
  const prefix = randomPrefix();
  const producer = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(producer);
  const config = parseConfig(
    `[llm]\ncontext_window = 200000\nbase_url = "${fake.url}"\n[compaction]\ncooldown_seconds = 0\n[web.bot]\nrespond_to = "all"\n`,
    'bench.toml',
  );
  const logger = createLogger({ level: 'silent' });
  const worker = await runCompactionWorker({
    config: () => config,
    env: { OPENAI_API_KEY: 'bench' },
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger,
    llmTimeoutMs: 120_000,
  });
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  const notifier = RedisContextNotifier.connect(redisUrl(), { prefix });
  const channels = new PgChannelStore({ db: fresh.db });
  const runs = new PgRunStore({ db: fresh.db });
  const bot = new Bot({
    config: () => config,
    channels,
    memories: new PgMemoryStore({ db: fresh.db }),
    runs,
    queue,
    notifier,
    chatModel: () => instantModel,
    logger,
  });
  const platform = new NullPlatform();
  await bot.start([platform]);
  const handlers = platform.handlers as PlatformHandlers;
  const tokenizer = await loadTokenizer('o200k_base');
  let id = 0;
  const message = (channelKey: string, text: string): InboundMessage => ({
    platform: 'web',
    channelKey,
    platformMessageId: `in-${++id}`,
    authorId: 'ana',
    authorName: 'ana',
    fromBot: false,
    text,
    ts: new Date().toISOString(),
    mentionsBot: false,
    direct: false,
  });
  const fill = async (key: string, tokens: number) => {
    let total = 0;
    for (let i = 0; total < tokens; i++) {
      const { entry, archivedTokens } = measureMessage(
        {
          seq: 0,
          role: 'user',
          author: 'bo',
          text: `status ${i}: service-${i % 40} deployed build ${1000 + i}, all checks green`,
        },
        tokenizer,
        50_000,
      );
      await channels.append(key, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
      total += entry.tokens;
    }
  };
  const timeTurns = async (key: string, n: number) => {
    for (let i = 0; i < 20; i++) await handlers.onMessage(message(key, `warm-up ${i}`));
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const start = nowMs();
      await handlers.onMessage(message(key, `turn ${i}: how is service-${i % 40} doing after the deploy?`));
      times.push(nowMs() - start);
    }
    return [...times].sort((a, b) => a - b);
  };

  try {
    const rows: (string | number)[][] = [];
    const results: Record<string, number[]> = {};
    for (const [label, tokens] of [
      ['1k', 1_000],
      ['100k', 100_000],
    ] as const) {
      const key = `web:turn-${label}`;
      await fill(key, tokens);
      const idle = await timeTurns(key, 300);
      // A manual pass of this channel: its LLM call is held open while the next turns run.
      await handlers.onCommand({
        platform: 'web',
        name: 'compact',
        channelKey: key,
        userId: 'ana',
        args: '',
      });
      await new Promise((r) => setTimeout(r, 200));
      const busy = await timeTurns(key, 300);
      const inFlight = (await runs.recent(key, 1))[0]?.status;
      results[label] = idle;
      rows.push([
        `${label} tokens`,
        median(idle).toFixed(2),
        percentile(idle, 0.99).toFixed(2),
        median(busy).toFixed(2),
        percentile(busy, 0.99).toFixed(2),
        (median(busy) / median(idle)).toFixed(2),
        inFlight ?? '?',
      ]);
    }

    // 1,000 active channels, 50 turns in flight at a time across them.
    const CHANNELS = 1_000;
    const TURNS = 5_000;
    for (let c = 0; c < CHANNELS; c++) await handlers.onMessage(message(`web:many-${c}`, 'hello'));
    const rssBefore = process.memoryUsage().rss;
    const start = nowMs();
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < TURNS) {
          const n = next++;
          await handlers.onMessage(message(`web:many-${n % CHANNELS}`, `update ${n} on the release`));
        }
      }),
    );
    const seconds = (nowMs() - start) / 1000;
    const rss = process.memoryUsage().rss;
    return [
      'Turn overhead without the model call (ms): append, recall, render, post, append the reply, monitor',
      '',
      table(
        [
          'context',
          'idle p50',
          'idle p99',
          'pass in flight p50',
          'pass in flight p99',
          'p50 ratio',
          'pass status',
        ],
        rows,
      ),
      '',
      `One process, ${CHANNELS.toLocaleString('en')} active channels, ${TURNS.toLocaleString('en')} turns, 50 at a time: ${(TURNS / seconds).toFixed(0)} turns/s; resident memory ${(rss / 2 ** 20).toFixed(0)} MiB (${(rssBefore / 2 ** 20).toFixed(0)} MiB before the run)`,
    ].join('\n');
  } finally {
    await bot.stop();
    await worker.close(1_000);
    await queue.close();
    await notifier.close();
    await cleanupPrefix(producer, prefix);
    await producer.quit();
    await fresh.close();
    await fake.close();
  }
}
