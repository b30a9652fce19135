/**
 * Pacing on the real stack (the second half of `npm run bench -- pacing`): `ebb`'s web API, the bot,
 * Postgres, BullMQ with its worker in this process, and the fake OpenAI server answering summaries
 * after 1, 2 or 3 seconds in turn. Two channels at once, each posting 2,000 messages at 30 messages/s
 * (each waits for its reply; a burst some 100 times a busy human channel):
 *
 * - `web:roomy`, a 32k window: a pass's worth of traffic is well inside the room between the
 *   background and emergency thresholds;
 * - `web:tight`, an 18k window: a pass's worth of traffic is most of that room, so passes start
 *   below the background threshold and some run beside another (follow-ups).
 *
 * The rate is fixed rather than "as fast as the bot answers" so that what is offered depends less on
 * the machine; a slower machine offers less (the turns/s column says how much). What does not depend
 * on the machine (everything acknowledged archived once, the decisions on an injected clock) is
 * tested in `apps/bot/test/system/pacing.int.test.ts`.
 */
import { Writable } from 'node:stream';
import { loadEnv, parseConfig, resolveChannel } from '@ebb/config';
import type { CompactionLogEvent } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { type RunningEbb, startEbb } from '../apps/bot/src/start-ebb.js';
import { FULL_SPEED_WEB, isPassRequest, startAckingModel } from '../apps/bot/test/small-window.js';
import { table } from './support.js';

const MESSAGES = 2_000;
const PER_SECOND = 30;
const CHANNELS = ['roomy', 'tight'] as const;

const config = (baseUrl: string) =>
  parseConfig(
    [
      '[llm]',
      'context_window = 32000',
      'max_output_tokens = 1000',
      `base_url = "${baseUrl}"`,
      '[memory]',
      'recall_max_tokens = 200',
      ...FULL_SPEED_WEB,
      '[web.bot]',
      'respond_to = "all"',
      '[channels."web:tight".llm]',
      'context_window = 18000',
      'max_output_tokens = 500',
    ].join('\n'),
    'pacing-bench.toml',
  );

/**
 * Posts the channel's messages one after another, the i-th no earlier than i / PER_SECOND seconds after
 * the first (at once when behind); counts the acknowledgements.
 */
async function postAll(ebb: RunningEbb, channel: string): Promise<{ acknowledged: number; seconds: number }> {
  const started = performance.now();
  let acknowledged = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const ahead = started + (i * 1000) / PER_SECOND - performance.now();
    if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
    const res = await fetch(`${ebb.web.url}/api/channels/${channel}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        author: i % 2 ? 'ana' : 'bo',
        text: `message ${i}: status of item ${i % 50} is ${i % 3 ? 'green' : 'amber'}, see OPS-${1000 + i}`,
        id: `${channel}-${i}`,
      }),
    });
    if (res.status === 200 && ((await res.json()) as { reply: string | null }).reply) acknowledged++;
  }
  return { acknowledged, seconds: (performance.now() - started) / 1000 };
}

/** Waits until no pass of the channel is queued or running (the burst's last passes land). */
async function settled(runs: PgRunStore, key: string): Promise<void> {
  for (let deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const recent = await runs.recent(key, 10);
    if (recent.every((r) => r.status !== 'queued' && r.status !== 'running')) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${key}: passes still running a minute after the burst`);
}

export async function pacingRealStackBench(): Promise<string> {
  const fake = await startAckingModel(32_000);
  // Summaries take 1, 2 or 3 seconds, in turn.
  for (const [i, delayMs] of [1_000, 2_000, 3_000].entries())
    fake.fail({ kind: 'slow', delayMs }, { when: (r) => isPassRequest(r) && r.index % 3 === i });
  const fresh = await freshSchemaDb();
  const prefix = randomPrefix();
  const lines: (CompactionLogEvent & { msg?: string })[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n'))
        if (line.includes('"compaction.')) lines.push(JSON.parse(line));
      done();
    },
  });
  const parsed = config(fake.url);
  const ebb = await startEbb({
    config: () => parsed,
    env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix }),
    logger: createLogger({ level: 'info', destination }),
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
  });
  const rows: (string | number)[][] = [];
  try {
    const posted = await Promise.all(CHANNELS.map((c) => postAll(ebb, c)));
    const runs = new PgRunStore({ db: fresh.db });
    const channels = new PgChannelStore({ db: fresh.db });
    for (const [i, name] of CHANNELS.entries()) {
      const key = `web:${name}`;
      await settled(runs, key);
      const archive = await channels.readArchive(key, 1, (await channels.loadPrefix(key)).headSeq);
      const users = archive.filter((m) => m.role === 'user');
      const distinct = new Set(users.map((m) => m.text)).size;
      const all = await runs.recent(key, 10_000);
      const ofChannel = lines.filter((l) => l.channel === key);
      const settings = resolveChannel(parsed, key);
      const policy = settings.compaction;
      const landed = all.filter((r) => r.status === 'completed' && r.finishedAt && r.createdAt);
      const passSeconds =
        landed.reduce((n, r) => n + ((r.finishedAt ?? 0) - (r.createdAt ?? 0)), 0) /
        1000 /
        Math.max(1, landed.length);
      const seconds = posted[i]?.seconds ?? 1;
      const tokensPerSecond = archive.reduce((n, m) => n + m.tokens, 0) / seconds;
      const growthPerPass =
        (tokensPerSecond * passSeconds) / (settings.llm.contextWindow - settings.llm.maxOutputTokens);
      const tier = (t: string) => all.filter((r) => r.tier === t).length;
      rows.push([
        key,
        `${settings.llm.contextWindow / 1000}k`,
        (MESSAGES / seconds).toFixed(0),
        `${(growthPerPass * 100).toFixed(0)}% (room ${((policy.emergencyThreshold - policy.backgroundThreshold) * 100).toFixed(0)}%)`,
        passSeconds.toFixed(1),
        MESSAGES,
        posted[i]?.acknowledged ?? 0,
        users.length,
        users.length - distinct,
        `${tier('background')} / ${tier('aggressive')} / ${tier('emergency')}`,
        ofChannel.filter((l) => l.event === 'compaction.emergency').length,
        ofChannel.filter((l) => l.event === 'compaction.enqueued' && l.reason?.startsWith('follows')).length,
        ofChannel.filter((l) => l.reason === 'cooldown').length,
        Math.max(...ofChannel.map((l) => l.usage ?? 0)).toFixed(3),
      ]);
    }
  } finally {
    await ebb.close();
    await dropPrefix(prefix);
    await fresh.close();
    await fake.close();
  }
  return [
    `The real stack, two channels at once, each ${MESSAGES.toLocaleString('en')} messages at ${PER_SECOND}/s (each waits for its reply), passes 1–3 s`,
    '',
    table(
      [
        'channel',
        'window',
        'turns/s',
        'growth per pass',
        'mean pass s',
        'sent',
        'acknowledged',
        'archived',
        'duplicated',
        'passes bg / aggr / heals',
        'emergencies',
        'follow-ups',
        'cooldown refusals',
        'peak usage',
      ],
      rows,
    ),
  ].join('\n');
}
