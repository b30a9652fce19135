/**
 * Ebb's composition root: config and environment in, running services out, closed in reverse order.
 * The parts (start/*.ts) each start one thing and add the steps that stop it; every missing setting
 * falls back to something that works on a bare machine, announced in one log line each, and is
 * overridden by the real setting:
 *
 * - no DATABASE_URL: embedded PGlite under EBB_DATA_DIR (start/database.ts);
 * - no reachable Redis (or an embedded database with no worker in this process): the in-process
 *   queue (start/queue.ts);
 * - no OPENAI_API_KEY and no `[llm] base_url`: the labelled offline responder and extractive
 *   summaries (start/model.ts);
 * - no Slack or Discord token: only the web channel (start/platforms.ts);
 * - an MCP server that cannot start: its tools are missing until it does (retried in the background);
 * - no OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT: no traces (the OpenTelemetry SDK is not even loaded).
 */
import type { PlatformAdapter } from '@ebb/core';
import { ShutdownSteps } from '@ebb/core';
import { EBB_VERSION, startTracing, TRACING_STOP_STEP_MS } from '@ebb/observability';
import type { WebAdapter } from '@ebb/web';
import type { Bot } from './bot/bot.js';
import { DashboardFeed } from './dashboard/dashboard-feed.js';
import { startBot } from './start/bot.js';
import { startDashboard } from './start/dashboard.js';
import { pgStores, startDatabase } from './start/database.js';
import { startModel } from './start/model.js';
import { Observability } from './start/observability.js';
import type { StartOptions } from './start/options.js';
import { checkExposure, platformAdapters, webAdapter } from './start/platforms.js';
import { startQueue } from './start/queue.js';
import { startToolbox } from './start/tools.js';

export type { StartOptions } from './start/options.js';

export interface RunningEbb {
  readonly bot: Bot;
  readonly web: WebAdapter;
  readonly adapters: readonly PlatformAdapter[];
  readonly embedded: { readonly database: boolean; readonly queue: boolean; readonly offline: boolean };
  close(): Promise<void>;
}

export async function startEbb(options: StartOptions): Promise<RunningEbb> {
  const steps = new ShutdownSteps(options.logger);
  try {
    // Refused before anything opens or listens.
    checkExposure(options);
    // First opened, last closed: the spans of the whole stop are flushed.
    const tracing = await startTracing(options.env, options.logger, { serviceName: 'ebb' });
    steps.add(() => tracing.shutdown(), TRACING_STOP_STEP_MS);
    const database = await startDatabase(options, steps);
    const observability = new Observability(options, database);
    const model = startModel(options, observability.metrics);
    const web = webAdapter(options);
    // What the dashboard sees live: usage after each turn, compaction events, context changes, and
    // the take-backs this process finished.
    const feed = new DashboardFeed();
    const onEvent = observability.compactionEvents(web, feed);
    const onTakeBackFinished = observability.takeBackEvents(web, feed);
    const queue = await startQueue(options, { database, observability, onEvent }, steps);
    const { mcp, toolbox } = await startToolbox(options, database, steps);
    const embedded = { database: database.kind === 'pglite', queue: queue.embedded, offline: model.offline };
    observability.mount(
      web,
      { database: embedded.database, queue: embedded.queue, llm: embedded.offline },
      mcp,
    );
    const stores = pgStores(database, options.logger, steps);
    await startDashboard(
      options,
      { web, stores, feed, toolbox, notifier: queue.notifier, board: queue.board },
      steps,
    );
    const adapters = await platformAdapters(options, web);
    const bot = await startBot(
      options,
      { adapters, stores, queue, model, toolbox, feed, onEvent, onTakeBackFinished, observability },
      steps,
    );
    const { describe } = model;
    options.logger.info(
      {
        event: 'ebb.started',
        url: web.url,
        version: EBB_VERSION,
        model: describe.model,
        baseUrl: model.offline ? null : describe.baseUrl,
        offline: model.offline,
      },
      `Ebb is up: the web channel is at ${web.url} (version ${EBB_VERSION}; replies by ${
        model.offline ? `the ${describe.model}` : `${describe.model} at ${describe.baseUrl}`
      })`,
    );
    return { bot, web, adapters, embedded, close: () => steps.close() };
  } catch (err) {
    await steps.close();
    throw err;
  }
}
