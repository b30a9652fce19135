/**
 * The durable pipeline on the real Postgres and Redis, with an instant fake LLM:
 * - enqueue → splice committed (the worker's context-changed notification), p50/p99 for passes over
 *   100 and 1,000 messages, against a baseline in the same run: the same splice done directly
 *   through the store (the part no pipeline can skip);
 * - passes per second with one and with four worker processes;
 * - memory recall latency with 100k memories in the scope, against 1k.
 */
import { runCompactionWorker } from '@ebb/compaction';
import { pipelineToml } from '@ebb/compaction/test-support';
import { spawnEbbWorker } from '@ebb/compaction-worker/test-support';
import { parseConfig } from '@ebb/config';
import { measureMessage, type NewMemory, type Tokenizer } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { median, nowMs, percentile, table } from './support.js';

const REPLY = { json: { summary: 'Ana and Bo agreed to ship on Friday.', memories: [] } };

export async function pipelineBench(): Promise<string> {
  const fake = await FakeOpenAiServer.start();
  fake.reply(() => REPLY);
  const fresh = await freshSchemaDb({ poolSize: 20 });
  const prefix = randomPrefix();
  const producer = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(producer);
  const config = parseConfig(`[llm]\nbase_url = "${fake.url}"\n`, 'bench.toml');
  const tokenizer = await loadTokenizer('o200k_base');
  const channels = new PgChannelStore({ db: fresh.db });
  const memories = new PgMemoryStore({ db: fresh.db });
  const runs = new PgRunStore({ db: fresh.db });
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  try {
    const latency = await latencyBench({ fresh, prefix, config, tokenizer, channels, runs, queue });
    const throughput = await throughputBench({ fresh, prefix, fake, tokenizer, channels, queue });
    const recall = await recallBench(memories);
    return [latency, '', throughput, '', recall].join('\n');
  } finally {
    await queue.close();
    await cleanupPrefix(producer, prefix);
    await producer.quit();
    await fresh.close();
    await fake.close();
  }
}

interface Deps {
  fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
  prefix: string;
  tokenizer: Tokenizer;
  channels: PgChannelStore;
  queue: BullmqCompactionQueue;
}

async function appendMessages(
  channels: PgChannelStore,
  tokenizer: Tokenizer,
  key: string,
  n: number,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const { entry, archivedTokens } = measureMessage(
      {
        seq: 0,
        role: 'user',
        author: `p${i % 5}`,
        text: `status ${i}: deploy of service-${i % 17} is green, p99 ${100 + i}ms`,
      },
      tokenizer,
      32_000,
    );
    await channels.append(key, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
  }
}

async function latencyBench(deps: Deps & { config: ReturnType<typeof parseConfig>; runs: PgRunStore }) {
  const { channels, queue, tokenizer } = deps;
  const worker = await runCompactionWorker({
    config: () => deps.config,
    env: { OPENAI_API_KEY: 'bench' },
    database: deps.fresh.database,
    redisUrl: redisUrl(),
    redisPrefix: deps.prefix,
    logger: createLogger({ level: 'silent' }),
    concurrency: 1,
  });
  const notifier = RedisContextNotifier.connect(redisUrl(), { prefix: deps.prefix });
  const waiting = new Map<string, () => void>();
  const unsubscribe = await notifier.subscribe((c) => waiting.get(c.channelKey)?.());
  const rows: (string | number)[][] = [];
  try {
    for (const [range, samples] of [
      [100, 40],
      [1_000, 20],
    ] as const) {
      const pipeline: number[] = [];
      const direct: number[] = [];
      // Two passes first warm the JIT, the pools and the queue; they are not counted.
      for (let s = -2; s < samples; s++) {
        // Pipeline: a channel whose first `range` messages go through queue, worker, fake LLM and splice.
        const key = `web:bench-${range}-${s}`;
        await appendMessages(channels, tokenizer, key, range + 10);
        const done = new Promise<void>((resolve) => waiting.set(key, resolve));
        const start = nowMs();
        await queue.enqueue({ channelKey: key, tier: 'background', fromSeq: 1, toSeq: range, generation: 0 });
        await done;
        const took = nowMs() - start;
        if (s >= 0) pipeline.push(took);
        // Baseline: the same splice straight through the store on a twin channel.
        const twin = `web:bench-direct-${range}-${s}`;
        await appendMessages(channels, tokenizer, twin, range + 10);
        const t = nowMs();
        await channels.splice(twin, {
          jobId: `direct-${range}-${s}`,
          fromSeq: 1,
          toSeq: range,
          text: REPLY.json.summary,
          tokens: 30,
        });
        if (s >= 0) direct.push(nowMs() - t);
      }
      const p = [...pipeline].sort((a, b) => a - b);
      const d = [...direct].sort((a, b) => a - b);
      rows.push([
        range.toLocaleString('en'),
        samples,
        median(p).toFixed(1),
        percentile(p, 0.99).toFixed(1),
        median(d).toFixed(1),
        percentile(d, 0.99).toFixed(1),
        (median(p) / median(d)).toFixed(1),
      ]);
    }
  } finally {
    await unsubscribe();
    await notifier.close();
    await worker.close();
  }
  return [
    'Pipeline overhead, instant fake LLM: enqueue → splice committed (ms), one worker (concurrency 1)',
    '',
    table(
      [
        'range (messages)',
        'passes',
        'pipeline p50',
        'pipeline p99',
        'direct splice p50',
        'direct splice p99',
        'p50 ratio',
      ],
      rows,
    ),
  ].join('\n');
}

async function throughputBench(deps: Deps & { fake: FakeOpenAiServer }) {
  const { channels, queue, tokenizer } = deps;
  const PASSES = 200;
  const rows: (string | number)[][] = [];
  for (const processes of [1, 4]) {
    const keys = Array.from({ length: PASSES }, (_, i) => `web:tp-${processes}-${i}`);
    // Setup, not measured: 200 channels of 60 messages, 8 channels at a time.
    for (let i = 0; i < keys.length; i += 8) {
      await Promise.all(keys.slice(i, i + 8).map((k) => appendMessages(channels, tokenizer, k, 60)));
    }
    const children = await Promise.all(
      Array.from({ length: processes }, () =>
        spawnEbbWorker({
          databaseUrl: deps.fresh.url,
          prefix: deps.prefix,
          configToml: pipelineToml(deps.fake.url),
        }),
      ),
    );
    try {
      const start = nowMs();
      for (const key of keys)
        await queue.enqueue({ channelKey: key, tier: 'background', fromSeq: 1, toSeq: 50, generation: 0 });
      await waitFor(async () => {
        const ctx = await Promise.all(keys.slice(-5).map((k) => channels.generation(k)));
        return ctx.every((g) => g > 0) && (await allSpliced(channels, keys));
      });
      const seconds = (nowMs() - start) / 1000;
      rows.push([processes, PASSES, seconds.toFixed(2), (PASSES / seconds).toFixed(1)]);
    } finally {
      for (const worker of children) worker.child.kill('SIGTERM');
      await Promise.all(children.map((worker) => worker.exited));
    }
  }
  return [
    'Passes per second (50-message passes, instant fake LLM, each worker process at concurrency 2)',
    '',
    table(['worker processes', 'passes', 'seconds', 'passes/s'], rows),
  ].join('\n');
}

async function allSpliced(channels: PgChannelStore, keys: readonly string[]): Promise<boolean> {
  for (const key of keys) if ((await channels.generation(key)) === 0) return false;
  return true;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const until = nowMs() + timeoutMs;
  while (!(await check())) {
    if (nowMs() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function recallBench(memories: PgMemoryStore) {
  // A vocabulary of made-up words, so memories differ the way real ones do (Zipf-like use).
  const vocabulary = Array.from({ length: 5_000 }, (_, i) => `w${(i * 2_654_435_761) % 99_991}x`);
  let seed = 7;
  const rnd = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed / 2_147_483_648;
  };
  const word = () => vocabulary[Math.floor(vocabulary.length * rnd() ** 2)] as string;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const fill = async (scope: string, n: number, text: (j: number) => string) => {
    for (let i = 0; i < n; i += 1_000) {
      const batch: NewMemory[] = [];
      for (let j = i; j < Math.min(n, i + 1_000); j++) {
        batch.push({
          type: 'fact',
          text: text(j),
          importance: (j % 10) / 10,
          scope,
          channelKey: scope,
          fromSeq: j + 1,
          toSeq: j + 1,
        });
      }
      await memories.upsert(batch);
    }
  };
  const queries = Array.from({ length: 50 }, () => sentence(4));
  const measure = async (scope: string, qs: readonly string[]) => {
    for (let w = 0; w < 20; w++)
      await memories.recall({ scopes: [scope], text: qs[w % qs.length] as string, limit: 10 });
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      const start = nowMs();
      await memories.recall({ scopes: [scope], text: qs[i % qs.length] as string, limit: 10 });
      times.push(nowMs() - start);
    }
    return [...times].sort((a, b) => a - b);
  };
  await fill('web:recall-1k', 1_000, (j) => `${sentence(10)} ${j}`);
  await fill('web:recall-100k', 100_000, (j) => `${sentence(10)} ${j}`);
  // Worst case: every memory shares the query's words, so every one must be ranked.
  await fill('web:recall-same', 100_000, (j) => `the billing runbook step ${j} is owned by the oncall team`);
  const small = await measure('web:recall-1k', queries);
  const large = await measure('web:recall-100k', queries);
  const same = await measure('web:recall-same', ['who owns the billing runbook?']);
  const row = (name: string, t: number[]) => [name, median(t).toFixed(2), percentile(t, 0.99).toFixed(2)];
  return [
    'Memory recall (full-text over the scope, ranked by relevance × importance × recency, limit 10), 200 queries after 20 warm-up (ms)',
    '',
    table(
      ['memories in scope', 'p50', 'p99'],
      [
        row('1,000 (varied text)', small),
        row('100,000 (varied text)', large),
        row('100,000 (every memory matches the query)', same),
      ],
    ),
    '',
    `100k/1k p50 ratio (varied text): ${(median(large) / median(small)).toFixed(1)}`,
  ].join('\n');
}
