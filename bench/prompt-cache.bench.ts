/**
 * What a provider's prompt cache can serve of a busy channel, on the real stack: the real teams-chat
 * transcript replayed into one web channel through the bot (real Postgres, Redis, BullMQ worker, the
 * real openai client), against fake OpenAI servers that apply OpenAI's caching rule (from 1,024
 * tokens, in 128-token steps, for an identical prefix) and report `cached_tokens`. Every message is
 * answered and every pass extracts memories, so a turn's prompt carries recalled memories.
 *
 * Each window is replayed with Ebb's prompt; `EBB_BENCH_LAYOUTS=before,ebb` replays it a second time
 * with the newest memories block moved right after the system prompt, where Ebb put it until
 * 2026-11-26 (a decorator around the chat model). "Uncached tokens per warm reply" is what a reply the
 * cache served a part of paid in full: the tail that changed since the last prompt. Cost is at
 * gpt-5.4-mini's list prices ($0.75 input, $0.075 cached input, $4.50 output per million tokens).
 *
 * The replay posts the messages back to back, but a provider's cache forgets a prefix after minutes
 * of silence (OpenAI: 5 to 10 in memory, a day with `prompt_cache_retention = "24h"`). So the reply
 * prompts are kept, each with the transcript time of the message it answers, and re-served in order
 * through the fake's cache rule on that clock, once per lifetime (`LIFETIMES`): the second table.
 * A reply is cold when longer than the lifetime passed since the channel's previous reply prompt
 * (the fake's rule, and `promptIsCold`'s: an entry that old is gone, so the cache holds nothing of
 * the channel); the first reply is not counted, so back to back no reply is cold (`served-on-clock.ts`).
 *
 *   npm run bench -- prompt-cache                      # 20,000 messages, 32k and 128k windows
 *   EBB_BENCH_MESSAGES=5000 EBB_BENCH_WINDOWS=32000 npm run bench -- prompt-cache
 *   EBB_BENCH_CONFIG='[compaction]\nworking_tokens = 12000' npm run bench -- prompt-cache
 *
 * Each row is also printed to stderr as soon as its replay ends.
 */
import { existsSync } from 'node:fs';
import { runCompactionWorker } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import {
  type ChatMessage,
  type ChatModel,
  costUsd,
  type InboundMessage,
  MEMORIES_TAG,
  type PlatformHandlers,
  TranscriptClock,
} from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer, OpenAiChatModel, openAiClient } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { createMetrics, meteredChatModel } from '@ebb/observability';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { Bot } from '../apps/bot/src/bot/bot.js';
import { type Served, serveOnClock, sharingTexts, type TimedPrompt } from './served-on-clock.js';
import { IRC_TRANSCRIPT, NullPlatform, readJsonl, table } from './support.js';

const MESSAGES = Number(process.env.EBB_BENCH_MESSAGES ?? 20_000);
const WINDOWS = (process.env.EBB_BENCH_WINDOWS ?? '32000,128000').split(',').map(Number);
/** `ebb` (today's layout); `before,ebb` adds the layout of before 2026-11-26 (memories after the system prompt). */
const LAYOUTS = (process.env.EBB_BENCH_LAYOUTS ?? 'ebb').split(',') as readonly ('ebb' | 'before')[];
/** `EBB_BENCH_CONFIG`: TOML appended to the bench's config (`[compaction]\nworking_tokens = 12000`). */
const EXTRA_TOML = (process.env.EBB_BENCH_CONFIG ?? '').replaceAll('\\n', '\n');
const PRICE = { input_per_mtok: 0.75, cached_input_per_mtok: 0.075, output_per_mtok: 4.5 };
/** Cache lifetimes the reply prompts are re-served at: none, OpenAI's in-memory minutes, an hour, a day. */
const LIFETIMES = [
  ['back to back', Number.POSITIVE_INFINITY],
  ['5 min', 5 * 60_000],
  ['60 min', 60 * 60_000],
  ['1 day', 24 * 60 * 60_000],
] as const;
const REPLY =
  'Thanks, noted. If the install still fails, paste the exact error and the output of uname -a, and say which release you are on.';

/** The prompt as Ebb laid it out before: the recalled memories right after the system prompt. */
function memoriesFirst(model: ChatModel): ChatModel {
  return {
    label: model.label,
    reply(messages, options) {
      const last = messages.at(-1);
      if (last?.role !== 'user' || !last.content.startsWith(`<${MEMORIES_TAG}`))
        return model.reply(messages, options);
      const [system, ...rest] = messages.slice(0, -1);
      return model.reply([system as ChatMessage, last, ...rest], options);
    },
  };
}

/** A summary of what the request shows, and a memory for a few of its lines (their seqs and authors). */
function summaryReply(request: RecordedRequest) {
  const user = String(request.body.messages[1]?.content ?? '');
  const lines = [...user.matchAll(/^\[#(\d+)\] ([^:\n]+): (.+)$/gm)];
  const picked = lines.filter((_, i) => i % Math.max(1, Math.floor(lines.length / 6)) === 0).slice(0, 6);
  const merge = !user.includes('[#');
  return {
    json: {
      summary: `## Topics\n${picked.map((m) => `- ${m[2]} asked about ${m[3]?.slice(0, 80)} (#${m[1]})`).join('\n') || '- earlier discussion'}`,
      ...(merge
        ? {}
        : {
            memories: [
              ...picked.map((m) => ({
                type: 'fact',
                text: `${m[2]} said: ${m[3]?.slice(0, 100)}`,
                importance: 0.6,
                speaker: m[2],
                fromSeq: Number(m[1]),
                toSeq: Number(m[1]),
              })),
              // Words most messages of the channel use: recall finds memories on almost every turn.
              ...(picked[0] === undefined
                ? []
                : [
                    {
                      type: 'fact',
                      text: `Regulars here help with ubuntu: install, apt, package, kernel, sound, driver, boot, grub, file, work, try, need, know, anyone, get, use, run (#${picked[0][1]})`,
                      importance: 0.9,
                      speaker: picked[0][2],
                      fromSeq: Number(picked[0][1]),
                      toSeq: Number(picked[0][1]),
                    },
                  ]),
            ],
          }),
    },
  };
}

interface Outcome {
  readonly prompt: number;
  readonly cached: number;
  readonly warmReplies: number;
  readonly warmUncached: number;
  readonly output: number;
  readonly replies: number;
  readonly withMemories: number;
  readonly withKey: number;
  readonly metricCached: number;
  readonly passes: number;
  readonly emergencies: number;
  readonly seconds: number;
  /** The reply prompts re-served at each of `LIFETIMES`, in its order. */
  readonly lifetimes: readonly Served[];
}

async function replay(
  window: number,
  layout: 'ebb' | 'before',
  turns: readonly { readonly text: string; readonly at: number }[],
): Promise<Outcome> {
  const tokenizer = await loadTokenizer('o200k_base');
  const counted = new Map<string, number>();
  const countTokens = (text: string) => {
    let n = counted.get(text);
    if (n === undefined) {
      n = tokenizer.count(text);
      if (counted.size > 200_000) counted.clear();
      counted.set(text, n);
    }
    return n;
  };
  // Keeps no request bodies (a 128k replay would hold gigabytes): what is counted is counted here.
  const chat = await FakeOpenAiServer.start({ countTokens, keepRequests: 1 });
  const seen = { replies: 0, withMemories: 0, withKey: 0 };
  // Every request to the chat server is a reply (the summarizer has its own); a turn is awaited
  // before the next message is posted, so its prompt answers the message posted last.
  const prompts: TimedPrompt[] = [];
  const texts = new Map<string, string>();
  let answering = 0;
  chat.reply((request) => {
    seen.replies++;
    prompts.push({ at: answering, body: sharingTexts(request.body, texts) });
    if (request.body.messages.some((m) => String(m.content ?? '').startsWith(`<${MEMORIES_TAG}`)))
      seen.withMemories++;
    if (typeof request.body.prompt_cache_key === 'string') seen.withKey++;
    return { content: REPLY };
  });
  const summarizer = await FakeOpenAiServer.start({ countTokens, promptCache: false, keepRequests: 1 });
  summarizer.reply(summaryReply);
  const fresh = await freshSchemaDb({ poolSize: 10 });
  const prefix = randomPrefix();
  const producer = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(producer);
  const toml = (url: string) =>
    parseConfig(
      `[llm]\nmodel = "gpt-5.4-mini"\ncontext_window = ${window}\nbase_url = "${url}"\n[web.bot]\nrespond_to = "all"\n${EXTRA_TOML}`,
      'bench.toml',
    );
  const botConfig = toml(chat.url);
  const workerConfig = toml(summarizer.url);
  const logger = createLogger({ level: 'silent' });
  const worker = await runCompactionWorker({
    config: () => workerConfig,
    env: { OPENAI_API_KEY: 'bench' },
    database: fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: prefix,
    logger,
  });
  const metrics = createMetrics({ prices: () => ({ 'gpt-5.4-mini': PRICE }) });
  const model = meteredChatModel(
    new OpenAiChatModel({
      client: openAiClient({ apiKey: 'bench', baseUrl: chat.url }),
      model: 'gpt-5.4-mini',
      maxOutputTokens: 4096,
    }),
    metrics.onLlmCalls,
  );
  const runs = new PgRunStore({ db: fresh.db });
  const bot = new Bot({
    config: () => botConfig,
    channels: new PgChannelStore({ db: fresh.db }),
    memories: new PgMemoryStore({ db: fresh.db }),
    runs,
    queue: new BullmqCompactionQueue({ connection: producer, prefix }),
    notifier: RedisContextNotifier.connect(redisUrl(), { prefix }),
    chatModel: () => (layout === 'ebb' ? model : memoriesFirst(model)),
    logger,
  });
  const platform = new NullPlatform();
  await bot.start([platform]);
  const handlers = platform.handlers as PlatformHandlers;
  const key = `web:cache-${window}-${layout}`;
  const started = performance.now();
  try {
    let id = 0;
    for (const { text, at } of turns) {
      answering = at;
      const message: InboundMessage = {
        platform: 'web',
        channelKey: key,
        platformMessageId: `in-${++id}`,
        authorId: 'irc',
        authorName: 'irc',
        fromBot: false,
        text,
        ts: new Date().toISOString(),
        mentionsBot: false,
        direct: false,
      };
      await handlers.onMessage(message);
    }
    const seconds = (performance.now() - started) / 1000;
    const recent = await runs.recent(key, 100_000);
    const metric =
      (await metrics.registry.getSingleMetric('ebb_llm_prompt_tokens_total')?.get())?.values ?? [];
    return {
      prompt: chat.cacheTotals.promptTokens,
      cached: chat.cacheTotals.cachedTokens,
      warmReplies: chat.cacheTotals.warmReplies,
      warmUncached: chat.cacheTotals.warmUncachedTokens,
      output: seen.replies * countTokens(REPLY),
      ...seen,
      metricCached: metric
        .filter((v) => v.labels.purpose === 'reply' && v.labels.cached === 'true')
        .reduce((sum, v) => sum + v.value, 0),
      passes: recent.filter((r) => r.status === 'completed').length,
      emergencies: recent.filter((r) => r.tier === 'emergency').length,
      seconds,
      lifetimes: LIFETIMES.map(([, ttlMs]) => serveOnClock(prompts, ttlMs, countTokens)),
    };
  } finally {
    await bot.stop();
    await worker.close(5_000);
    await cleanupPrefix(producer, prefix);
    producer.disconnect();
    await fresh.close();
    await chat.close();
    await summarizer.close();
  }
}

export async function promptCacheBench(): Promise<string> {
  if (!existsSync(IRC_TRANSCRIPT)) return `(skipped: ${IRC_TRANSCRIPT} is not there; set EBB_BENCH_DATA)`;
  const messages = readJsonl(IRC_TRANSCRIPT).slice(0, MESSAGES);
  const transcript = new TranscriptClock();
  const clock = messages.map((m) => transcript.advance(m.ts));
  const turns = messages.map((m, i) => ({ text: `${m.author}: ${m.text}`, at: clock[i] ?? 0 }));
  const rows: (string | number)[][] = [];
  const lifetimeRows: (string | number)[][] = [];
  for (const window of WINDOWS) {
    for (const layout of LAYOUTS) {
      const o = await replay(window, layout, turns);
      const cost = costUsd({ input: o.prompt, cached: o.cached, output: o.output }, PRICE);
      const uncachedCost = costUsd({ input: o.prompt, output: o.output }, PRICE);
      const layoutCell = layout === 'ebb' ? 'memories last (now)' : 'memories first (before 2026-11-26)';
      const cells = [
        `${window / 1000}k`,
        layoutCell,
        o.replies,
        `${((100 * o.cached) / Math.max(1, o.prompt)).toFixed(1)}%`,
        (o.warmUncached / Math.max(1, o.warmReplies)).toFixed(0),
        ((o.prompt / o.replies) * 1000).toFixed(0),
        `$${((1000 * cost) / o.replies).toFixed(3)}`,
        `$${((1000 * uncachedCost) / o.replies).toFixed(3)}`,
        `${o.withMemories} / ${o.withKey}`,
        o.metricCached === o.cached ? 'equal' : `${o.metricCached} ≠ ${o.cached}`,
        `${o.passes} / ${o.emergencies}`,
        (o.replies / o.seconds).toFixed(0),
      ];
      console.error(cells.join(' | '));
      rows.push(cells);
      for (const [i, served] of o.lifetimes.entries()) {
        const usage = { input: served.prompt, cached: served.cached, output: 0 };
        const input = costUsd(usage, PRICE);
        const withOutput = costUsd({ ...usage, output: o.output }, PRICE);
        const lifetimeCells = [
          `${window / 1000}k`,
          layoutCell,
          LIFETIMES[i]?.[0] ?? '',
          `${served.cold} (${((100 * served.cold) / Math.max(1, o.replies)).toFixed(2)}%)`,
          `${((100 * served.cached) / Math.max(1, served.prompt)).toFixed(1)}%`,
          `$${((1000 * input) / o.replies).toFixed(3)}`,
          `$${((1000 * withOutput) / o.replies).toFixed(3)}`,
        ];
        console.error(lifetimeCells.join(' | '));
        lifetimeRows.push(lifetimeCells);
      }
    }
  }
  return [
    `${MESSAGES.toLocaleString('en')} messages of ${IRC_TRANSCRIPT.split('/').at(-1)}, one web channel, every message answered, at gpt-5.4-mini prices.`,
    '',
    table(
      [
        'window',
        'prompt layout',
        'replies',
        'prompt tokens served from cache',
        'uncached tokens per warm reply',
        'prompt tokens per 1,000 replies',
        'cost per 1,000 messages',
        'cost with no cache',
        'prompts with memories / with prompt_cache_key',
        'cached tokens in /metrics vs the server',
        'passes / emergencies',
        'turns/s',
      ],
      rows,
    ),
    '',
    "The same reply prompts re-served in order through the cache rule at the transcript's own pace, for each cache lifetime.",
    '',
    table(
      [
        'window',
        'prompt layout',
        'cache lifetime',
        'cold replies',
        'reply prompt tokens served from cache',
        'input per 1,000 replies',
        'with output',
      ],
      lifetimeRows,
    ),
  ].join('\n');
}
