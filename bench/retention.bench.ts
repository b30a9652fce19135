/**
 * Retention off the turn path: a channel of 100,000 archived messages (`--messages N`), spread over
 * 400 days and compacted into one summary, is swept with `retain_days = 30` while turns run on 50
 * other channels, one after another, on the real Postgres and Redis, in two shapes:
 *
 * 1. in-process: the bot's own `RetentionSweep` and take-back runner (the in-process queue's case:
 *    `npm start`, an embedded database), beside the turns in this process;
 * 2. separate process: a real `ebb worker` on the same schema and Redis prefix sweeps a second such
 *    channel (production with Redis), and shares only Postgres (and the machine's two cores) with the
 *    turns here.
 *
 * The extractive summarizer writes each summary again (offline). Reported per phase: the turns'
 * p50/p99/max, the longest event-loop delay of this process, and each sweep's p99 against the
 * baseline phases before and after it (the machine is shared: compare within the run); then each
 * sweep's duration and what it took back. `--shape in-process|separate` runs one of them.
 * `--interleave` stops and continues `ebb worker` in windows of seconds during its sweep and compares
 * the turns of its running windows with those of its stopped ones: the same minutes of a shared
 * machine, so its load drifting over a long sweep is in both.
 *
 * `npm run bench -- retention [--messages N] [--shape in-process|separate] [--interleave]`.
 */
import { parseArgs } from 'node:util';
import { passSettingsResolver } from '@ebb/compaction';
import { type EbbConfig, parseConfig } from '@ebb/config';
import type { ChatModel, InboundMessage, PlatformHandlers } from '@ebb/core';
import { PgChannelStore, PgMemoryStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { BullmqCompactionQueue, createRedis, RedisContextNotifier, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { sql } from 'drizzle-orm';
import { Bot } from '../apps/bot/src/bot/bot.js';
import { loadArchive, Phase, phaseTable, type SweepWorker, startSweepWorker } from './retention-support.js';
import { median, NullPlatform, nowMs, percentile } from './support.js';

const IN_PROCESS = 'web:retention-archive';
const SEPARATE = 'web:retention-archive-worker';
const TALKING = 'web:retention-turns';
const DAY = 86_400_000;
const BASELINE_TURNS = 2_000;
/**
 * Turns on one set of 50 channels; then the next set, so no context grows beyond ~80 messages in any
 * phase (a growing one slows its turns: a million's sweep ran 129,000 turns on 50 channels, and the
 * p50 after it was 1.5× the one before), far from a compaction pass.
 */
const TURNS_PER_SET = 2_050;
/** `--interleave`: the worker's windows running and stopped, and the turns ignored after a switch. */
const RUNNING_MS = 2_000;
const PAUSED_MS = 1_000;
const SETTLE_MS = 100;
const CONTROL_MS = 120_000;

const sortedTurns = (phase: Phase) => [...phase.turns].sort((a, b) => a - b);
const p99 = (phase: Phase) => percentile(sortedTurns(phase), 0.99);
const p50 = (phase: Phase) => median(sortedTurns(phase));

/** Answers at once: the model call is not part of the turn overhead. */
const instantModel: ChatModel = { label: 'instant', reply: async () => ({ text: 'ok, noted.' }) };

export async function retentionBench(argv: readonly string[] = []): Promise<string> {
  const { values } = parseArgs({
    args: [...argv],
    options: { messages: { type: 'string' }, shape: { type: 'string' }, interleave: { type: 'boolean' } },
  });
  const interleave = values.interleave === true;
  const total = Number(values.messages ?? 100_000);
  const shapes = values.shape === undefined ? ['in-process', 'separate'] : [values.shape];
  const fresh = await freshSchemaDb({ poolSize: 20 });
  const prefix = randomPrefix();
  const producer = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(producer);
  const now = Date.now();
  const started = nowMs();
  if (shapes.includes('in-process')) await loadArchive(fresh.db, IN_PROCESS, total, now);
  if (shapes.includes('separate')) await loadArchive(fresh.db, SEPARATE, total, now);
  await fresh.db.execute(sql`analyze`);
  const loadSeconds = (nowMs() - started) / 1000;

  const logger = createLogger({ level: (process.env.EBB_BENCH_LOG as 'info') ?? 'silent' });
  const channels = new PgChannelStore({ db: fresh.db });
  const queue = new BullmqCompactionQueue({ connection: producer, prefix });
  const notifier = RedisContextNotifier.connect(redisUrl(), { prefix });
  const plain = parseConfig('[web.bot]\nrespond_to = "all"\n', 'bench.toml');
  let swept: { messages: number } | undefined;
  const botWith = (config: EbbConfig) =>
    new Bot({
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
  // One platform for every bot of the run: its reply ids never repeat. (A platform per bot numbered
  // its replies from 1 again, which collided with the replies archived before: a third of the turns
  // of the sweep's phase took the duplicate path, which inflated their times, not the sweep.)
  const platform = new NullPlatform();
  let id = 0;
  /** One turn; `warm` unless it was the first on its channel (that one loads the channel). */
  const turn = async () => {
    const n = id++;
    const message: InboundMessage = {
      platform: 'web',
      channelKey: `${TALKING}-${Math.floor(n / TURNS_PER_SET)}-${n % 50}`,
      platformMessageId: `t${n}`,
      authorId: 'ana',
      authorName: 'ana',
      fromBot: false,
      text: `turn ${n}: how is service-${n % 40} doing after the deploy?`,
      ts: new Date().toISOString(),
      mentionsBot: false,
      direct: false,
    };
    const start = nowMs();
    await (platform.handlers as PlatformHandlers).onMessage(message);
    return { ms: nowMs() - start, warm: n % TURNS_PER_SET >= 50 };
  };
  /** Turns on a started bot: each of the 50 channels loaded into its cache first, then until `done`. */
  const measure = async (bot: Bot, name: string, done: (turns: number) => Promise<boolean>) => {
    await bot.start([platform]);
    try {
      for (let i = 0; i < 50; i++) await turn();
      const phase = new Phase(name);
      while (!(await done(phase.turns.length))) {
        const { ms, warm } = await turn();
        if (warm) phase.turns.push(ms);
      }
      return phase.end();
    } finally {
      await bot.stop(0);
    }
  };
  /**
   * Turns while `ebb worker` sweeps, in windows: the worker runs for `RUNNING_MS`, then is stopped
   * (SIGSTOP) for `PAUSED_MS`, and so on until `done`. Each turn counts for the window it ran in, so
   * turns with and without the sweep share the same minutes of the machine's load; a turn in the
   * first `SETTLE_MS` of a window counts for neither (the statement in flight at a stop). Then the
   * same windows for `CONTROL_MS` with the sweep over (an A/A run: the method's own noise).
   */
  const measureInterleaved = async (bot: Bot, worker: SweepWorker, done: () => Promise<boolean>) => {
    await bot.start([platform]);
    let stopped = false;
    let switchedAt = nowMs();
    const windows = async (running: Phase, paused: Phase, until: () => Promise<boolean>) => {
      while (!(await until())) {
        if (nowMs() - switchedAt >= (stopped ? PAUSED_MS : RUNNING_MS)) {
          stopped = !stopped;
          if (stopped) worker.pause();
          else worker.resume();
          switchedAt = nowMs();
        }
        const settled = nowMs() - switchedAt >= SETTLE_MS;
        const { ms, warm } = await turn();
        if (warm && settled) (stopped ? paused : running).turns.push(ms);
      }
      running.end();
      paused.end();
    };
    try {
      for (let i = 0; i < 50; i++) await turn();
      const running = new Phase('during the sweep, in ebb worker: its windows running');
      const paused = new Phase('the same minutes, its windows stopped (SIGSTOP)');
      await windows(running, paused, done);
      const controlRunning = new Phase('after the sweep (nothing to do): its windows running');
      const controlPaused = new Phase('the same minutes, its windows stopped');
      const controlEnd = nowMs() + CONTROL_MS;
      await windows(controlRunning, controlPaused, async () => nowMs() >= controlEnd);
      return { running, paused, controlRunning, controlPaused };
    } finally {
      worker.resume();
      await bot.stop(0);
    }
  };
  const baseline = (name: string) => measure(botWith(plain), name, async (n) => n >= BASELINE_TURNS);
  const takenBack = async (key: string) => (await channels.takeBacks.pendingTakeBacks(key)).length === 0;
  const leftWithText = async (key: string) =>
    (await channels.archiveTimes(key, 0, total)).filter((m) => m.at < now - 30 * DAY && !m.taken).length;

  const rows: { phase: Phase; baselines?: readonly Phase[] }[] = [];
  const paired: { name: string; running: Phase; paused: Phase }[] = [];
  const notes: string[] = [];
  try {
    let before = await baseline('before the sweeps');
    rows.push({ phase: before });
    for (const shape of shapes) {
      let during: Phase;
      let interleaved: Record<'running' | 'paused' | 'controlRunning' | 'controlPaused', Phase> | undefined;
      let seconds = Number.NaN;
      let messages = 0;
      const key = shape === 'in-process' ? IN_PROCESS : SEPARATE;
      if (shape === 'in-process') {
        // The bot sweeps at its start (then hourly); turns run until the take-back is complete.
        const config = parseConfig(
          `[web.bot]\nrespond_to = "all"\n[channels."${key}".privacy]\nretain_days = 30\n`,
          'bench.toml',
        );
        const sweepStart = nowMs();
        during = await measure(botWith(config), 'during the sweep, in the bot', async () => {
          if (swept === undefined || !(await takenBack(key))) return false;
          seconds = (nowMs() - sweepStart) / 1000;
          return true;
        });
        messages = swept?.messages ?? 0;
      } else {
        // `ebb worker` sweeps at its start; the bot here sweeps nothing (no channel of it retains).
        const worker = await startSweepWorker({ databaseUrl: fresh.url, redisUrl: redisUrl(), prefix, key });
        try {
          await worker.started;
          const sweepStart = nowMs();
          let workerSwept: { messages: number } | undefined;
          void worker.swept.then((s) => {
            workerSwept = s;
          });
          const sweepDone = async () => {
            if (workerSwept === undefined || !(await takenBack(key))) return false;
            seconds = (nowMs() - sweepStart) / 1000;
            return true;
          };
          if (interleave) {
            const windows = await measureInterleaved(botWith(plain), worker, sweepDone);
            during = windows.running;
            interleaved = windows;
          } else {
            during = await measure(botWith(plain), 'during the sweep, in ebb worker', sweepDone);
          }
          messages = (await worker.swept).messages;
        } finally {
          await worker.stop();
        }
      }
      const after = await baseline('after it');
      rows.push({ phase: during, baselines: [before, after] });
      if (interleaved) {
        rows.push(
          { phase: interleaved.paused, baselines: [before, after] },
          { phase: interleaved.controlRunning },
          { phase: interleaved.controlPaused },
        );
        paired.push(
          { name: 'during the sweep', running: interleaved.running, paused: interleaved.paused },
          {
            name: 'after it, nothing to sweep (the A/A control)',
            running: interleaved.controlRunning,
            paused: interleaved.controlPaused,
          },
        );
      }
      rows.push({ phase: after });
      before = after;
      notes.push(
        `${shape === 'in-process' ? 'In the bot' : 'In ebb worker'}: took back ${messages.toLocaleString('en')} messages and completed its take-back (the summary written again) in ${seconds.toFixed(1)} s; ${await leftWithText(key)} messages older than 30 days were left with their text.`,
      );
    }
    return [
      `${total.toLocaleString('en')} archived messages over 400 days per swept channel (loaded in ${loadSeconds.toFixed(0)} s), retain_days = 30; turns on 50 other channels, one at a time, before, during and after each sweep (ms)`,
      '',
      phaseTable(rows),
      '',
      ...paired.map(
        ({ name, running, paused }) =>
          `Interleaved, ${name}: p99 ${p99(running).toFixed(2)} ms in the worker's running windows against ${p99(paused).toFixed(2)} ms in its stopped ones, a ratio of ${(p99(running) / p99(paused)).toFixed(2)} (p50 ${(p50(running) / p50(paused)).toFixed(2)}).`,
      ),
      ...notes,
    ].join('\n');
  } finally {
    await notifier.close();
    await queue.close();
    await cleanupPrefix(producer, prefix);
    await producer.quit();
    await fresh.close();
  }
}
