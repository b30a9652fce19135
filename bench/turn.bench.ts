/**
 * The bot's turn, without the model: append the message, recall memories, render the prompt, post,
 * append the reply, run the monitor, all on the real Postgres and Redis with a worker in process.
 * The model is an in-process stand-in that answers at once, so what is timed is Ebb's own work.
 * - p50/p99 per turn with 1k and 100k tokens of context (target p99 < 20 ms);
 * - the same while a compaction pass of that channel is in flight (its LLM call held open);
 * - a channel with spend limits (`[budget]`, below them) against one without, turns interleaved: what
 *   reading the spend before each answer costs;
 * - many active channels served by one process: turns per second, resident memory and the context
 *   cache's hit rate. `npm run bench -- turn --channels 100,1000,10000,50000 --turns 30000
 *   [--cache-mb N]` runs only this part, one row per channel count, each turn on a channel drawn at
 *   random (seeded) with irc-ubuntu's messages, 50 turns in flight; the ratio is to the 1,000-channel
 *   row of the same run.
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set the bench traces as `ebb start` does (`startTracing`), so
 * `npm run bench -- turn-tracing` can time the same turns traced and not (`turn-tracing.bench.ts`).
 */
import { parseArgs } from 'node:util';

import { runCompactionWorker } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import type { ChatModel, InboundMessage, PlatformHandlers } from '@ebb/core';
import { measureMessage, RetryingUsageStore } from '@ebb/core';
import { PgBudgetNotices, PgChannelStore, PgMemoryStore, PgRunStore, PgUsageStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { startTracing } from '@ebb/observability';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { seededRandom } from '@ebb/testing/seeded-random';
import { Bot } from '../apps/bot/src/bot/bot.js';
import { chatMessages, median, NullPlatform, nowMs, percentile, table } from './support.js';

interface TurnBenchOptions {
  /** Channel counts, one row each; given, only the many-channel part runs. */
  readonly channels?: readonly number[];
  readonly turns: number;
  readonly cacheMb?: number;
}

function benchOptions(argv: readonly string[]): TurnBenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { channels: { type: 'string' }, turns: { type: 'string' }, 'cache-mb': { type: 'string' } },
  });
  const count = (text: string, flag: string) => {
    const n = Number(text.replaceAll('_', ''));
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} takes positive integers, got ${text}`);
    return n;
  };
  return {
    ...(values.channels === undefined
      ? {}
      : { channels: values.channels.split(',').map((c) => count(c, 'channels')) }),
    turns: values.turns === undefined ? 5_000 : count(values.turns, 'turns'),
    ...(values['cache-mb'] === undefined ? {} : { cacheMb: count(values['cache-mb'], 'cache-mb') }),
  };
}

/** Prices, and limits far above what the bench spends, for the `web:limited-*` channels. */
const LIMITS =
  '[prices."gpt-5.4-mini"]\ninput_per_mtok = 0.75\noutput_per_mtok = 4.5\n' +
  '[channels."web:limited-*".budget]\ndaily_usd = 1000\nworkspace_monthly_usd = 100000\n';

/** Answers at once: the model call is not part of the turn overhead. */
const instantModel: ChatModel = { label: 'instant', reply: async () => ({ text: 'ok, noted.' }) };

export async function turnBench(argv: readonly string[] = []): Promise<string> {
  const options = benchOptions(argv);
  // Off (nothing loaded) unless the environment names an endpoint.
  const tracing = await startTracing(process.env, createLogger({ level: 'warn' }), {
    serviceName: 'ebb-bench',
  });
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
    `[llm]\ncontext_window = 200000\nbase_url = "${fake.url}"\n[compaction]\ncooldown_seconds = 0\n[web.bot]\nrespond_to = "all"\n${LIMITS}${
      options.cacheMb === undefined ? '' : `[bot]\ncontext_cache_mb = ${options.cacheMb}\n`
    }`,
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
    // As `ebb start` wires it (`pgStores`).
    usage: new RetryingUsageStore({ store: new PgUsageStore({ db: fresh.db }), log: logger }),
    budgetNotices: new PgBudgetNotices({ db: fresh.db }),
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

  const texts = chatMessages().messages.map((m) => m.text);
  /** `channels` active channels, `turns` turns on channels drawn at random, 50 in flight. */
  const manyChannels = async (channels: number, turns: number) => {
    const key = (c: number) => `web:c${channels}-${c}`;
    (globalThis as { gc?: () => void }).gc?.();
    const { rss: rssBefore, heapUsed: heapBefore } = process.memoryUsage();
    const atStart = bot.contextCache();
    const inFlight = async (count: number, turn: (n: number) => Promise<unknown>) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < count) await turn(next++);
        }),
      );
    };
    // Every channel has spoken once before the timed turns.
    await inFlight(channels, (c) => handlers.onMessage(message(key(c), texts[c % texts.length] ?? 'hello')));
    const random = seededRandom(channels);
    const draws = Array.from({ length: turns }, () => Math.floor(random() * channels));
    const before = bot.contextCache();
    const start = nowMs();
    await inFlight(turns, (n) =>
      handlers.onMessage(message(key(draws[n] ?? 0), texts[(channels + n) % texts.length] ?? 'hello')),
    );
    const seconds = (nowMs() - start) / 1000;
    const after = bot.contextCache();
    // The heap that is live, not what the collector has yet to take back (node --expose-gc).
    (globalThis as { gc?: () => void }).gc?.();
    const lookups = after.hits - before.hits + (after.misses - before.misses);
    return {
      turnsPerSecond: turns / seconds,
      rssBefore,
      heapBefore,
      rss: process.memoryUsage().rss,
      heap: process.memoryUsage().heapUsed,
      hitRate: (after.hits - before.hits) / lookups,
      cache: after,
      evictions: after.evictions - atStart.evictions,
    };
  };

  try {
    const sections: string[] = [];
    if (options.channels === undefined) {
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

      // Spend limits: the same 1k-token channel with and without [budget], turns interleaved.
      await fill('web:limited-1k', 1_000);
      await fill('web:unlimited-1k', 1_000);
      const paired = { limited: [] as number[], unlimited: [] as number[] };
      for (let i = 0; i < 20; i++) {
        await handlers.onMessage(message('web:limited-1k', `warm-up ${i}`));
        await handlers.onMessage(message('web:unlimited-1k', `warm-up ${i}`));
      }
      for (let i = 0; i < 300; i++) {
        for (const kind of i % 2 === 0
          ? (['limited', 'unlimited'] as const)
          : (['unlimited', 'limited'] as const)) {
          const start = nowMs();
          await handlers.onMessage(message(`web:${kind}-1k`, `turn ${i}: how is service-${i % 40} doing?`));
          paired[kind].push(nowMs() - start);
        }
      }
      const limited = [...paired.limited].sort((a, b) => a - b);
      const unlimited = [...paired.unlimited].sort((a, b) => a - b);
      const budgetRows = [
        ['no [budget]', median(unlimited).toFixed(2), percentile(unlimited, 0.99).toFixed(2), '1.00'],
        [
          'daily_usd + workspace_monthly_usd',
          median(limited).toFixed(2),
          percentile(limited, 0.99).toFixed(2),
          (median(limited) / median(unlimited)).toFixed(2),
        ],
      ];

      sections.push(
        [
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
        ].join('\n'),
      );
      sections.push(
        [
          'Spend limits: a 1k-token channel with [budget] limits (far from reached) and one without, 300 turns each, interleaved (ms)',
          '',
          table(['channel', 'p50', 'p99', 'p50 ratio'], budgetRows),
        ].join('\n'),
      );
    }

    const counts = options.channels ?? [1_000];
    const measured: [number, Awaited<ReturnType<typeof manyChannels>>][] = [];
    for (const channels of counts) measured.push([channels, await manyChannels(channels, options.turns)]);
    const baseline = measured.find(([channels]) => channels === 1_000)?.[1].turnsPerSecond;
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
    const budget = measured[0]?.[1].cache.budgetBytes ?? 0;
    sections.push(
      [
        `One process, ${options.turns.toLocaleString('en')} turns on channels drawn at random, 50 at a time; context cache budget ${mib(budget)} MiB ([bot] context_cache_mb)`,
        '',
        table(
          [
            'active channels',
            'turns/s',
            'ratio to 1,000',
            'cache hit rate',
            'cached channels',
            'cache MiB (estimated)',
            'evictions',
            'RSS MiB before → after',
            'live heap MiB before → after',
          ],
          measured.map(([channels, r]) => [
            channels.toLocaleString('en'),
            r.turnsPerSecond.toFixed(0),
            baseline === undefined ? '–' : (r.turnsPerSecond / baseline).toFixed(2),
            `${(100 * r.hitRate).toFixed(1)}%`,
            r.cache.channels.toLocaleString('en'),
            mib(r.cache.bytes),
            r.evictions.toLocaleString('en'),
            `${mib(r.rssBefore)} → ${mib(r.rss)}`,
            `${mib(r.heapBefore)} → ${mib(r.heap)}`,
          ]),
        ),
      ].join('\n'),
    );
    return sections.join('\n\n');
  } finally {
    await bot.stop();
    await worker.close(1_000);
    await queue.close();
    await notifier.close();
    await cleanupPrefix(producer, prefix);
    await producer.quit();
    await fresh.close();
    await fake.close();
    await tracing.shutdown();
  }
}
