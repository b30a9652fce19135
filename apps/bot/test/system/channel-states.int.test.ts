/**
 * Passes that land while turns are running, on the real stack: the web API, the bot, Postgres,
 * BullMQ with its worker in this process, and the fake OpenAI server. One channel takes a burst of
 * 2,000 short messages at 45 a second; every 200th mentions the bot, whose reply takes 1 or 2 s
 * (the messages behind it wait in the channel's actor, then come in a rush), and summaries take 0.1
 * to 0.3 s. The bot is inside a turn nearly all the time, so passes land during turns (during a
 * reply, or during the append of a quick turn), and their context-changed notifications arrive
 * mid-turn.
 *
 * The channel's passes are small (`background_fraction = 0.1`), and after each rush usage stays
 * over the background threshold (0.6) for several landings in a row, so nothing resets the count of
 * passes that freed little: a landing judged on the spliced context compared with itself counts as
 * freeing nothing, and three in a row stop the channel's passes (`compaction.skipped
 * reason=ineffective`, then emergencies). Measured before the fix: 5 such skips and 2 emergencies.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import type { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { FULL_SPEED_WEB, isPassRequest, jsonLinesLogger, startAckingModel } from '../small-window.js';

const MESSAGES = 2_000;
const MENTION_EVERY = 200;
const PER_SECOND = 45;
const KEY = 'web:burst';

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let ebb: RunningEbb;
const prefix = randomPrefix();
const log = jsonLinesLogger();

beforeAll(async () => {
  fake = await startAckingModel();
  // Replies take 1 or 2 s; summaries 0.1, 0.2 or 0.3 s.
  for (const [i, delayMs] of [1_000, 2_000].entries()) {
    fake.fail({ kind: 'slow', delayMs }, { when: (r) => !isPassRequest(r) && r.index % 2 === i });
  }
  for (const [i, delayMs] of [100, 200, 300].entries()) {
    fake.fail({ kind: 'slow', delayMs }, { when: (r) => isPassRequest(r) && r.index % 3 === i });
  }
  fresh = await freshSchemaDb();
  const config = parseConfig(
    [
      '[llm]',
      'context_window = 4000',
      'max_output_tokens = 300',
      `base_url = "${fake.url}"`,
      '[compaction]',
      'background_threshold = 0.6',
      'aggressive_threshold = 0.9',
      'background_fraction = 0.1',
      'summary_max_tokens = 250',
      'protect_recent = 4',
      'cooldown_seconds = 0',
      '[memory]',
      'recall_max_tokens = 0',
      ...FULL_SPEED_WEB,
    ].join('\n'),
    'mid-turn-landings.toml',
  );
  ebb = await startEbb({
    config: () => config,
    env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix }),
    logger: log.logger,
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
  });
}, 60_000);

afterAll(async () => {
  await ebb?.close();
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
});

describe('a burst into one channel whose passes land mid-turn', () => {
  it(`keeps compacting through ${MESSAGES} messages: no pass that freed its share counts as freeing nothing`, async () => {
    const started = performance.now();
    for (let i = 0; i < MESSAGES; i++) {
      const ahead = started + (i * 1000) / PER_SECOND - performance.now();
      if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
      const mention = i % MENTION_EVERY === MENTION_EVERY - 1;
      const res = await fetch(`${ebb.web.url}/api/channels/burst/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          author: i % 2 ? 'ana' : 'bo',
          text: `${mention ? '@ebb ' : ''}item ${i % 50} ${i % 3 ? 'green' : 'amber'}`,
          id: `burst-${i}`,
        }),
      });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
    const runs = new PgRunStore({ db: fresh.db });
    await vi.waitFor(
      async () => {
        const recent = await runs.recent(KEY, 10);
        expect(recent.every((r) => r.status !== 'queued' && r.status !== 'running')).toBe(true);
      },
      { timeout: 30_000, interval: 200 },
    );
    const channels = new PgChannelStore({ db: fresh.db });
    const archived = await channels.readArchive(KEY, 1, (await channels.loadPrefix(KEY)).headSeq);
    const passes = (await runs.recent(KEY, 10_000)).filter(
      (r) => r.status === 'completed' && r.tier !== 'emergency',
    );
    const freed = passes.map((r) => ((r.tokensBefore ?? 0) - (r.tokensAfter ?? 0)) / (r.tokensBefore ?? 1));
    const skipped = log.events('compaction.skipped');
    const emergencies = log.events('compaction.emergency');
    const reasons: Record<string, number> = {};
    for (const l of skipped) reasons[String(l.reason)] = (reasons[String(l.reason)] ?? 0) + 1;
    console.info(
      `${KEY}: ${archived.filter((m) => m.role === 'user').length} archived, ${passes.length} passes ` +
        `(each freeing ${freed.map((f) => Math.round(f * 100)).join(' ')}% of the context), ` +
        `${emergencies.length} emergencies, skipped ${JSON.stringify(reasons)}`,
    );

    expect(archived.filter((m) => m.role === 'user')).toHaveLength(MESSAGES);
    expect(skipped.filter((l) => l.reason === 'ineffective')).toEqual([]);
    // The passes freed what a pass of their size frees: a tenth of the context, a pass being sized
    // to free that besides its summary (all but one in twenty at least half of it, all the way
    // through the burst; 44 passes freeing about a fifth each when measured).
    expect(passes.length).toBeGreaterThan(30);
    expect(freed.filter((f) => f >= 0.05).length).toBeGreaterThanOrEqual(0.95 * passes.length);
    expect(emergencies).toEqual([]);
  }, 240_000);
});
