/**
 * The bot part: the turn loop over the other parts, started on the platforms (a platform that cannot
 * connect for now runs degraded and is retried in the background; a refused token stops the start,
 * see start-failure.ts). Its stop is the first step of shutdown.
 */
import { passSettingsResolver } from '@ebb/compaction';
import type { CompactionEventSink, PlatformAdapter } from '@ebb/core';
import { SHUTDOWN_STEP_MS, type ShutdownSteps } from '@ebb/core';
import { meteredSummarizer, tracedSummarizer } from '@ebb/observability';
import type { Toolbox } from '@ebb/tools';
import { Bot, type BotOptions, TURN_CUT_OFF_MS } from '../bot/bot.js';
import type { DashboardFeed } from '../dashboard/dashboard-feed.js';
import type { Stores } from './database.js';
import type { Model } from './model.js';
import type { Observability } from './observability.js';
import { llmRetry, type StartOptions } from './options.js';
import type { RunningQueue } from './queue.js';
import { describeStartFailure } from './start-failure.js';

export interface BotParts {
  readonly adapters: readonly PlatformAdapter[];
  readonly stores: Stores;
  readonly queue: RunningQueue;
  readonly model: Model;
  readonly toolbox: Toolbox;
  readonly feed: DashboardFeed;
  readonly onEvent: CompactionEventSink;
  /** A take-back this process finished: the dashboard and the web channel's stream. */
  readonly onTakeBackFinished: NonNullable<BotOptions['onTakeBackFinished']>;
  readonly observability: Observability;
}

export async function startBot(options: StartOptions, parts: BotParts, steps: ShutdownSteps): Promise<Bot> {
  const { env, logger } = options;
  const { adapters, queue, feed, observability } = parts;
  const { metrics } = observability;
  const config = options.config();
  const bot = new Bot({
    config: options.config,
    ...parts.stores,
    queue: queue.queue,
    notifier: queue.notifier,
    chatModel: parts.model.chatModel,
    logger,
    onEvent: parts.onEvent,
    onTakeBackFinished: parts.onTakeBackFinished,
    onTurn: (turn) => {
      metrics.onTurn(turn);
      feed.onTurn(turn);
    },
    toolbox: parts.toolbox,
    onToolCall: metrics.onToolCall,
    // The summaries a deletion writes again: the channel's summarizer, as a worker's pass has it
    // (metered, and recorded in the channel's usage).
    passSettings: passSettingsResolver({
      config: options.config,
      env,
      log: logger,
      wrap: (s) => tracedSummarizer(meteredSummarizer(s, metrics.onLlmCalls)),
      usage: parts.stores.usage,
      ...llmRetry(options),
    }),
    onMessageChange: metrics.onMessageChange,
    onRetention: metrics.onRetention,
    onBudget: metrics.onBudget,
    // With a BullMQ queue, runCompactionWorker sweeps (in `ebb worker`, or in `ebb dev`'s own
    // worker); with the in-process queue the passes, and so retention, run in this process.
    sweepsRetention: queue.embedded,
    spool: queue.spool,
    ...(queue.claims === undefined ? {} : { claims: queue.claims }),
    ...(queue.leases === undefined ? {} : { leases: queue.leases }),
    ...(queue.appends === undefined ? {} : { appends: queue.appends }),
  });
  await bot.start(adapters, {
    degradable: (err) => describeStartFailure(err).kind !== 'refused',
    ...options.platformRetry,
  });
  observability.watch(bot);
  logger.info(
    {
      event: 'ebb.platforms_started',
      platforms: adapters.map((a) => a.platform),
      degraded: Object.keys(bot.degradedPlatforms()),
    },
    `platforms: ${adapters.map((a) => a.platform).join(', ')}`,
  );
  // Stops intake, then lets the turns in hand finish (up to the grace period; past it, the turns
  // not begun are refused and the running ones cut off, for up to TURN_CUT_OFF_MS) before the
  // worker, the queue and the stores close: no turn is left running against closed stores.
  const graceMs = config.shutdown.grace_seconds * 1000;
  steps.add(() => bot.stop(graceMs), graceMs + TURN_CUT_OFF_MS + SHUTDOWN_STEP_MS);
  return bot;
}
