/**
 * Retention off the turn path: a channel of 100,000 archived messages (`--messages N`), spread over
 * 400 days and compacted into one summary, is swept with `retain_days = 30` by the bot's own
 * `RetentionSweep` and take-back runner (the extractive summarizer rewrites the summary), while
 * turns run on 50 other channels of the same bot, one after another, on the real Postgres and Redis.
 * Reported: the turns' p50/p99 before the sweep and during it (and their ratio: the machine is
 * shared, so compare within the run), the sweep's duration and what it took back.
 *
 * `npm run bench -- retention [--messages N]`.
 */
import { parseArgs } from 'node:util';
import { passSettingsResolver } from '@ebb/compaction';
import { parseConfig } from '@ebb/config';
import type { ChatModel, InboundMessage, PlatformHandlers } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { freshSchemaDb } from '@ebb/testing/postgres';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/testing/redis';
import { sql } from 'drizzle-orm';
import { Bot } from '../apps/bot/src/bot/bot.js';
import { median, NullPlatform, nowMs, percentile, table } from './support.js';

const ARCHIVED = 'web:retention-archive';
const TALKING = 'web:retention-turns';
const DAY = 86_400_000;

/** Answers at once: the model call is not part of the turn overhead. */
const instantModel: ChatModel = { label: 'instant', reply: async () => ({ text: 'ok, noted.' }) };

export async function retentionBench(argv: readonly string[] = []): Promise<string> {
  const { values } = parseArgs({ args: [...argv], options: { messages: { type: 'string' } } });
  const total = Number(values.messages ?? 100_000);
  const fresh = await freshSchemaDb({ poolSize: 20 });
  const prefix = randomPrefix();
  const producer = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(producer);
  // Offline: the extractive summarizer writes the summary again (no model to wait on).
  const config = parseConfig(
    `[web.bot]\nrespond_to = "all"\n[channels."${ARCHIVED}".privacy]\nretain_days = 30\n`,
    'bench.toml',
  );
  const now = Date.now();
  const started = nowMs();
  // The archive in bulk: message i said (400 - 400 i / N) days ago; one summary over all but the
  // newest 1,000, as a channel that has been compacted for a year holds it.
  await fresh.db.execute(sql`
    insert into channels (key, platform, head_seq, prefix_end, span_tokens, raw_tokens, generation)
    values (${ARCHIVED}, 'web', ${total}, ${total - 1_000}, 40, ${1_000 * 20}, 1)`);
  await fresh.db.execute(sql`
    insert into messages (channel_key, seq, role, author, content, tokens, context_tokens, ts)
    select ${ARCHIVED}, g, 'user', 'u' || (g % 50),
      'status ' || g || ': service-' || (g % 40) || ' deployed build ' || (1000 + g) || ', all checks green',
      20, 20,
      to_char(to_timestamp((${now} - (400 - 400.0 * g / ${total}) * ${DAY}) / 1000.0) at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    from generate_series(1, ${total}) g`);
  await fresh.db.execute(sql`
    insert into context_spans (channel_key, from_seq, to_seq, kind, text, tokens, created_generation, job_id)
    values (${ARCHIVED}, 1, ${total - 1_000}, 'summary', 'A year of deploys, all green.', 40, 1, 'bench-summary')`);
  await fresh.db.execute(sql`analyze`);
  const loadSeconds = (nowMs() - started) / 1000;

  const logger = createLogger({ level: (process.env.EBB_BENCH_LOG as 'info') ?? 'silent' });
  const channels = new PgChannelStore({ db: fresh.db });
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  const notifier = RedisContextNotifier.connect(redisUrl(), { prefix });
  let swept: { messages: number } | undefined;
  const bot = new Bot({
    config: () => config,
    channels,
    memories: new PgMemoryStore({ db: fresh.db }),
    runs: new PgRunStore({ db: fresh.db }),
    queue,
    notifier,
    chatModel: () => instantModel,
    passSettings: passSettingsResolver({ config: () => config, env: {} }),
    logger,
    onRetention: (s) => {
      swept = s;
    },
  });
  const platform = new NullPlatform();
  let id = 0;
  const turn = async (handlers: PlatformHandlers) => {
    const message: InboundMessage = {
      platform: 'web',
      // Spread over 50 channels, so no context grows much over the run (a growing one slows its turns).
      channelKey: `${TALKING}-${id % 50}`,
      platformMessageId: `t${++id}`,
      authorId: 'ana',
      authorName: 'ana',
      fromBot: false,
      text: `turn ${id}: how is service-${id % 40} doing after the deploy?`,
      ts: new Date().toISOString(),
      mentionsBot: false,
      direct: false,
    };
    const start = nowMs();
    await handlers.onMessage(message);
    return nowMs() - start;
  };
  try {
    // The baseline: the same bot, the same turns, before the sweep (retention off until it starts).
    const baselineBot = new Bot({
      config: () => parseConfig('[web.bot]\nrespond_to = "all"\n', 'bench.toml'),
      channels,
      memories: new PgMemoryStore({ db: fresh.db }),
      runs: new PgRunStore({ db: fresh.db }),
      queue,
      notifier,
      chatModel: () => instantModel,
      logger,
    });
    const quiet = new NullPlatform();
    await baselineBot.start([quiet]);
    const quietHandlers = quiet.handlers as PlatformHandlers;
    // Each of the 50 channels loaded into the cache first, in both phases.
    for (let i = 0; i < 50; i++) await turn(quietHandlers);
    const before: number[] = [];
    for (let i = 0; i < 2_000; i++) before.push(await turn(quietHandlers));
    await baselineBot.stop(0);

    // The sweep starts with the bot (then hourly); turns run until the take-back is complete.
    const sweepStart = nowMs();
    await bot.start([platform]);
    const handlers = platform.handlers as PlatformHandlers;
    for (let i = 0; i < 50; i++) await turn(handlers);
    const during: number[] = [];
    let sweepSeconds = Number.NaN;
    while (Number.isNaN(sweepSeconds)) {
      during.push(await turn(handlers));
      if (swept !== undefined && (await channels.takeBacks.pendingTakeBacks(ARCHIVED)).length === 0)
        sweepSeconds = (nowMs() - sweepStart) / 1000;
    }
    const left = (await channels.archiveTimes(ARCHIVED, 0, total)).filter(
      (m) => m.at < now - 30 * DAY && !m.taken,
    ).length;
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const b = sorted(before);
    const d = sorted(during);
    return [
      `${total.toLocaleString('en')} archived messages over 400 days (loaded in ${loadSeconds.toFixed(0)} s), retain_days = 30; turns on 50 other channels of the same bot, one at a time, before and during the sweep (ms)`,
      '',
      table(
        ['phase', 'turns', 'p50', 'p99', 'p99 ratio to before'],
        [
          ['before the sweep', b.length, median(b).toFixed(2), percentile(b, 0.99).toFixed(2), '1.00'],
          [
            'during the sweep',
            d.length,
            median(d).toFixed(2),
            percentile(d, 0.99).toFixed(2),
            (percentile(d, 0.99) / percentile(b, 0.99)).toFixed(2),
          ],
        ],
      ),
      '',
      `The sweep took back ${(swept?.messages ?? 0).toLocaleString('en')} messages and completed its take-back (the summary written again) in ${sweepSeconds.toFixed(1)} s; ${left} messages older than 30 days were left with their text.`,
    ].join('\n');
  } finally {
    await bot.stop(0);
    await notifier.close();
    await queue.close();
    await cleanupPrefix(producer, prefix);
    await producer.quit();
    await fresh.close();
  }
}
