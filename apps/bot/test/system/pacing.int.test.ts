/**
 * Compaction under a burst, in what does not depend on how fast this machine is. The rates the real
 * stack keeps up with (turns a second, passes, emergencies, growth per pass) are measured by
 * `npm run bench -- pacing` (BENCHMARKS.md, "Pacing"), not here: a test of the rate a machine reaches
 * is a test of the machine.
 *
 * - On the real stack (the web API, the bot, Postgres, BullMQ with its worker in this process, the
 *   fake OpenAI server): two channels post back to back, each waiting for its reply, while passes
 *   summarize and splice their contexts (6k and 4k windows, so several land during the burst). Every
 *   message acknowledged is archived once, and the model (a 6k window) refuses no request as too long.
 * - On an injected clock: the pacing decisions, with the bench's shapes (30 messages a second,
 *   passes of 1, 2 and 3 seconds, the 32k and 18k windows) replayed through `Simulation` on the
 *   transcript's clock: the `CompactionMonitor` and `decideAfterTurn` the bot asks. No emergency, and
 *   the cooldown delays only passes queued below the aggressive threshold.
 */
import { loadEnv, parseConfig, resolveChannel } from '@ebb/config';
import { type CompactionEvent, Simulation, type SimulationEvent, type SummaryEvent } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import type { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { loadCompactorSettings } from '../../src/status/channel-status.js';
import { FULL_SPEED_WEB, startAckingModel } from '../small-window.js';

const MESSAGES = 400;
const CHANNELS = ['roomy', 'tight'] as const;

/** What each channel posts: one line of a busy status channel. */
const line = (i: number) =>
  `message ${i}: status of item ${i % 50} is ${i % 3 ? 'green' : 'amber'}, see OPS-${1000 + i}`;

describe('compaction under a burst, on the real stack', () => {
  let fake: FakeOpenAiServer;
  let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
  let ebb: RunningEbb;
  const prefix = randomPrefix();

  beforeAll(async () => {
    fake = await startAckingModel(6_000);
    fresh = await freshSchemaDb();
    const config = parseConfig(
      [
        '[llm]',
        'context_window = 6000',
        'max_output_tokens = 300',
        `base_url = "${fake.url}"`,
        '[compaction]',
        'summary_max_tokens = 250',
        ...FULL_SPEED_WEB,
        '[web.bot]',
        'respond_to = "all"',
        '[channels."web:tight".llm]',
        'context_window = 4000',
      ].join('\n'),
      'pacing-test.toml',
    );
    ebb = await startEbb({
      config: () => config,
      env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix }),
      logger: createLogger({ level: 'silent' }),
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

  /** Posts the channel's messages one after another, each once its reply is in; counts the replies. */
  async function postAll(channel: string): Promise<number> {
    let acknowledged = 0;
    for (let i = 0; i < MESSAGES; i++) {
      const res = await fetch(`${ebb.web.url}/api/channels/${channel}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ author: i % 2 ? 'ana' : 'bo', text: line(i), id: `${channel}-${i}` }),
      });
      if (res.status === 200 && ((await res.json()) as { reply: string | null }).reply) acknowledged++;
    }
    return acknowledged;
  }

  it(`archives each of two channels' ${MESSAGES} messages once while passes splice their contexts`, async () => {
    const acknowledged = await Promise.all(CHANNELS.map((c) => postAll(c)));
    const runs = new PgRunStore({ db: fresh.db });
    const channels = new PgChannelStore({ db: fresh.db });
    for (const [i, name] of CHANNELS.entries()) {
      const key = `web:${name}`;
      // The passes the burst started land before the archive is read.
      await vi.waitFor(
        async () => {
          const recent = await runs.recent(key, 10);
          expect(recent.every((r) => r.status !== 'queued' && r.status !== 'running')).toBe(true);
        },
        { timeout: 60_000, interval: 200 },
      );
      const archive = await channels.readArchive(key, 1, (await channels.loadPrefix(key)).headSeq);
      const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
      expect(acknowledged[i], key).toBe(MESSAGES);
      expect(users, key).toEqual(Array.from({ length: MESSAGES }, (_, n) => line(n)));
      // The burst ran beside passes that spliced (else it tested appends alone).
      const completed = (await runs.recent(key, 1_000)).filter((r) => r.status === 'completed');
      expect(completed.length, key).toBeGreaterThanOrEqual(2);
    }
    expect(fake.completionRequests.filter((r) => r.fault === 'context_length_exceeded')).toEqual([]);
  }, 120_000);
});

describe('pacing decisions on an injected clock', () => {
  const RATE = 30;
  const REPLAYED = 2_000;

  /** The bench's burst: message i at i / RATE seconds, each with its reply, replayed through `Simulation`. */
  async function replay(contextWindow: number, jobSeconds: number) {
    const config = parseConfig(
      ['[llm]', `context_window = ${contextWindow}`, 'max_output_tokens = 1000'].join('\n'),
      'pacing-replay.toml',
    );
    const settings = await loadCompactorSettings(resolveChannel(config, 'web:burst'));
    const events: SimulationEvent[] = [];
    const sim = new Simulation({
      policy: settings.policy,
      contextWindow: settings.contextWindow,
      maxOutputTokens: settings.maxOutputTokens,
      reservedTokens: settings.reservedTokens,
      tokenizer: settings.tokenizer,
      jobLatency: 0,
      jobSeconds,
      emit: (e) => events.push(e),
    });
    const start = Date.parse('2026-11-24T09:00:00Z');
    for (let i = 0; i < REPLAYED; i++) {
      const ts = new Date(start + Math.round((i * 1000) / RATE)).toISOString();
      sim.turn({ role: 'user', author: i % 2 ? 'ana' : 'bo', text: line(i), ts });
      sim.turn({ role: 'assistant', author: 'ebb', text: `ack ${i + 1}`, ts });
    }
    sim.finish();
    const summary = events.find((e): e is SummaryEvent => e.type === 'summary');
    if (summary === undefined) throw new Error('the replay reported no summary');
    const compaction = events.filter((e): e is CompactionEvent => e.type === 'compaction');
    return { policy: settings.policy, summary, compaction };
  }

  for (const contextWindow of [32_000, 18_000])
    for (const jobSeconds of [1, 2, 3])
      it(`keeps a ${contextWindow / 1000}k window out of emergencies at ${RATE} messages/s with ${jobSeconds} s passes`, async () => {
        const { policy, summary, compaction } = await replay(contextWindow, jobSeconds);
        expect(summary.tiers.background + summary.tiers.aggressive).toBeGreaterThan(3);
        expect(summary.tiers.emergency).toBe(0);
        expect(summary.peakUsage).toBeLessThan(policy.emergencyThreshold);
        // The cooldown only ever delays a pass (it starts on a later turn than it was queued on)
        // queued below the aggressive threshold, and never refuses one.
        expect(compaction.filter((e) => e.reason === 'cooldown')).toEqual([]);
        const queued = new Map(compaction.filter((e) => e.event === 'enqueued').map((e) => [e.jobId, e]));
        for (const started of compaction.filter((e) => e.event === 'started')) {
          const enqueued = queued.get(started.jobId);
          if (enqueued !== undefined && started.seq > enqueued.seq)
            expect(enqueued.usage).toBeLessThan(policy.aggressiveThreshold);
        }
      });
});
