/**
 * Ebb's composition root: config and environment in, running services out, closed in reverse order.
 * Every missing setting falls back to something that works on a bare machine, announced in one log
 * line each, and is overridden by the real setting:
 *
 * - no DATABASE_URL: embedded PGlite under EBB_DATA_DIR;
 * - no reachable Redis (or an embedded database with no worker in this process): the in-process queue;
 * - no OPENAI_API_KEY and no `[llm] base_url`: the labelled offline responder and extractive summaries;
 * - no Slack or Discord token: only the web channel;
 * - an MCP server that cannot start: its tools are missing until it does (retried in the background).
 */
import { join } from 'node:path';

import {
  createEmbeddedPipeline,
  logCompactionEvent,
  passSettingsResolver,
  type RunningWorker,
  runCompactionWorker,
} from '@ebb/compaction';
import { type EbbConfig, type EbbEnv, resolveChannel } from '@ebb/config';
import {
  type AnswerClaims,
  type CompactionQueue,
  type ContextNotifier,
  type InboundSpool,
  type PlatformAdapter,
  settleWithin,
} from '@ebb/core';
import { type Database, migrate, PgChannelStore, PgMemoryStore, PgRunStore, PgUsageStore } from '@ebb/db';
import { isOffline, OFFLINE_LABEL, type RetryOptions } from '@ebb/llm';
import type { Logger } from '@ebb/logger';
import {
  bullmqQueueStats,
  type ContextCacheStats,
  createMetrics,
  type HealthCheck,
  healthCheck,
  meteredSummarizer,
  mountObservability,
  postgresCheck,
  redisCheck,
} from '@ebb/observability';
import {
  BullmqCompactionQueue,
  createRedis,
  describeRedisUrl,
  isRedisReachable,
  RedisAnswerClaims,
  RedisContextNotifier,
  RedisInboundSpool,
  waitForReady,
} from '@ebb/queue';
import type { McpBackoff } from '@ebb/tools';
import { type BoardQueue, exposure, mountDashboard, WebAdapter } from '@ebb/web';
import { Bot, TURN_CUT_OFF_MS } from './bot/bot.js';
import { FallbackInboundSpool, FileInboundSpool } from './bot/file-inbound-spool.js';
import { chatModels } from './chat-models.js';
import { StoreDashboardSource } from './dashboard-channels.js';
import { DashboardFeed } from './dashboard-feed.js';
import { OfferedTools } from './offered-tools.js';
import { openDatabase } from './open-database.js';
import { describeStartFailure, StartRefusedError } from './start-failure.js';
import { startTools } from './start-tools.js';

export interface StartOptions {
  readonly config: () => EbbConfig;
  readonly env: EbbEnv;
  readonly logger: Logger;
  /** Run compaction passes in this process too (`ebb dev`). */
  readonly withWorker: boolean;
  /** Overrides `[web] port` (0 for a free port in tests). */
  readonly webPort?: number;
  /** Tests: a database already opened and migrated. */
  readonly database?: Database;
  /** The LLM retry policy of replies and passes (default: each one's own); tests shorten it. */
  readonly llmRetry?: RetryOptions;
  /** Node process metrics in /metrics (off in tests that start several instances). */
  readonly processMetrics?: boolean;
  /** How a platform that cannot connect at start is retried (tests shorten it). */
  readonly platformRetry?: { readonly initialDelayMs?: number; readonly maxDelayMs?: number };
  /** Tests: where the Slack Web API and Discord REST live (local fakes), and Slack's HTTP receiver port. */
  readonly platforms?: {
    readonly slackApiUrl?: string;
    readonly slackPort?: number;
    readonly discordRestApi?: string;
  };
  /** How a crashed or failed MCP server is retried (tests shorten it). */
  readonly mcpBackoff?: Partial<McpBackoff>;
}

export interface RunningEbb {
  readonly bot: Bot;
  readonly web: WebAdapter;
  readonly adapters: readonly PlatformAdapter[];
  readonly embedded: { readonly database: boolean; readonly queue: boolean; readonly offline: boolean };
  close(): Promise<void>;
}

const SHUTDOWN_STEP_MS = 3_000;

export async function startEbb(options: StartOptions): Promise<RunningEbb> {
  const { env, logger } = options;
  const closers: { readonly close: () => Promise<unknown>; readonly ms: number }[] = [];
  const onClose = (close: () => Promise<unknown>, ms = SHUTDOWN_STEP_MS) => closers.push({ close, ms });
  // Each step gets a bounded time, so a dead Redis or Postgres cannot hold the process at exit.
  const close = async () => {
    for (const closer of closers.reverse()) {
      const step = closer
        .close()
        .catch((err: unknown) => logger.warn({ event: 'shutdown.step_failed', err }, 'shutdown step failed'));
      if (!(await settleWithin(step, closer.ms)).done)
        logger.warn({ event: 'shutdown.step_timed_out' }, 'a shutdown step took too long; moving on');
    }
  };
  try {
    // Refused before anything opens or listens.
    checkExposure(options, logger);

    // Database.
    let database = options.database;
    if (!database) {
      database = await openDatabase(env, logger);
      const opened = database;
      onClose(() => opened.close());
      await migrate(database);
    }
    const embeddedDatabase = database.kind === 'pglite';
    const metrics = createMetrics({
      processMetrics: options.processMetrics ?? true,
      prices: () => options.config().prices,
    });
    const checks: Record<string, HealthCheck> = { database: postgresCheck(database.db) };
    if (database.kind === 'pglite') {
      const made = { existing: '', template: ' (new, copied from the install template)', created: ' (new)' };
      logger.info(
        { event: 'ebb.fallback', part: 'database', dataDir: env.EBB_DATA_DIR, origin: database.origin },
        `no DATABASE_URL: using the embedded database (PGlite) in ${env.EBB_DATA_DIR}${made[database.origin]}`,
      );
    }

    // Model.
    const defaults = resolveChannel(options.config(), 'defaults');
    const offline = isOffline({ apiKey: env.OPENAI_API_KEY, baseUrl: defaults.llm.baseUrl });
    if (offline) {
      logger.info(
        { event: 'ebb.fallback', part: 'llm' },
        `no OPENAI_API_KEY and no [llm] base_url: answering with the ${OFFLINE_LABEL} and extractive summaries`,
      );
    }
    const chatModel = chatModels(options, offline, metrics, logger);

    // Platforms.
    const web = webAdapter(options);

    // Queue: BullMQ when Redis answers and a worker can reach this database; else in-process.
    const redisUrl = env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const useRedis = (!embeddedDatabase || options.withWorker) && (await isRedisReachable(redisUrl, 1_000));
    let queue: CompactionQueue;
    let notifier: ContextNotifier;
    // Where Slack and Discord messages wait while Postgres is away: Redis, and a local file when
    // Redis cannot take them either (or there is no Redis).
    const localSpool = new FileInboundSpool(join(env.EBB_DATA_DIR, 'spool.jsonl'));
    let spool: InboundSpool = localSpool;
    // Who answers a message when replicas share Redis (one process needs none).
    let claims: AnswerClaims | undefined;
    let worker: RunningWorker | undefined;
    let boardQueue: BoardQueue | undefined;
    // What the dashboard sees live: usage after each turn, compaction events, context changes.
    const feed = new DashboardFeed();
    const onEvent = (e: Parameters<typeof logCompactionEvent>[1]) => {
      logCompactionEvent(logger, e);
      metrics.onCompactionEvent(e);
      web.publish(e.channel, { type: 'compaction', ...e });
      feed.onCompactionEvent(e);
    };
    if (useRedis) {
      const producer = createRedis(redisUrl, { role: 'producer', logger });
      onClose(async () => (producer.status === 'ready' ? producer.quit() : producer.disconnect()));
      await waitForReady(producer);
      const bullmq = new BullmqCompactionQueue({
        connection: producer,
        prefix: env.EBB_REDIS_PREFIX,
        logger,
      });
      onClose(() => bullmq.close());
      checks.redis = redisCheck(producer);
      metrics.observeQueue(bullmqQueueStats(bullmq.bullmq));
      const redisNotifier = RedisContextNotifier.connect(redisUrl, { prefix: env.EBB_REDIS_PREFIX, logger });
      onClose(() => redisNotifier.close());
      queue = bullmq;
      spool = new FallbackInboundSpool(
        new RedisInboundSpool({ connection: producer, prefix: env.EBB_REDIS_PREFIX }),
        localSpool,
      );
      claims = new RedisAnswerClaims({ connection: producer, prefix: env.EBB_REDIS_PREFIX });
      boardQueue = bullmq.bullmq;
      notifier = redisNotifier;
      if (options.withWorker) {
        const db = database;
        worker = await runCompactionWorker({
          config: options.config,
          env,
          database: db,
          redisUrl,
          redisPrefix: env.EBB_REDIS_PREFIX,
          logger,
          metrics,
          ...(options.llmRetry === undefined ? {} : { retry: options.llmRetry }),
        });
        const running = worker;
        // Lets the jobs in hand finish, or hands them back after 10 s.
        onClose(() => running.close(10_000), 12_000);
      }
    } else {
      logger.info(
        { event: 'ebb.fallback', part: 'queue' },
        embeddedDatabase && !options.withWorker
          ? 'embedded database: compaction passes run in this process (in-process queue)'
          : `no Redis at ${describeRedisUrl(redisUrl)}: compaction passes run in this process (in-process queue)`,
      );
      const pipeline = createEmbeddedPipeline({
        config: options.config,
        env,
        database,
        onEvent,
        logger,
        wrapSummarizer: (s) => meteredSummarizer(s, metrics.onLlmCalls),
        ...(options.llmRetry === undefined ? {} : { retry: options.llmRetry }),
      });
      onClose(() => pipeline.close());
      queue = pipeline.queue;
      notifier = pipeline.notifier;
    }

    // Tools: the built-in history tools and the MCP servers', per channel as [tools] allow says.
    const { mcp, toolbox } = await startTools({
      config: options.config,
      database,
      logger,
      ...(options.mcpBackoff === undefined ? {} : { mcpBackoff: options.mcpBackoff }),
    });
    onClose(() => mcp.close());

    // Platforms.
    let degraded = (): Record<string, string> => ({});
    let contextCache: (() => ContextCacheStats) | undefined;
    mountObservability(web.app, {
      metrics,
      health: () =>
        healthCheck({
          checks,
          fallbacks: { database: embeddedDatabase, queue: !useRedis, llm: offline },
          degraded: degraded(),
          mcp: mcp.states(),
          ...(contextCache === undefined ? {} : { contextCache: contextCache() }),
        }),
    });
    // One set of stores for the bot and the dashboard.
    const stores = {
      channels: new PgChannelStore({ db: database.db }),
      memories: new PgMemoryStore({ db: database.db }),
      runs: new PgRunStore({ db: database.db }),
      usage: new PgUsageStore({ db: database.db }),
    };
    mountDashboard(web.app, {
      tokenRequired: env.EBB_ADMIN_TOKEN !== undefined,
      queue: boardQueue,
      source: new StoreDashboardSource({
        config: options.config,
        ...stores,
        feed,
        offeredTools: new OfferedTools(toolbox),
      }),
      closing: web.stopping,
    });
    // Passes a worker in another process splices reach the bot (and the dashboard) only this way.
    const unsubscribe = await notifier.subscribe((change) => feed.onContextChanged(change));
    onClose(unsubscribe);
    const adapters: PlatformAdapter[] = [web];
    const config = options.config();
    const overrides = options.platforms ?? {};
    const slackApiUrl = overrides.slackApiUrl ?? config.slack.api_url;
    // A platform's client library (Bolt, discord.js: most of a cold start) loads only with its token.
    if (env.SLACK_BOT_TOKEN !== undefined) {
      const { SlackAdapter } = await import('@ebb/slack');
      adapters.push(
        new SlackAdapter({
          mode: config.slack.mode,
          botToken: env.SLACK_BOT_TOKEN,
          ...(env.SLACK_APP_TOKEN === undefined ? {} : { appToken: env.SLACK_APP_TOKEN }),
          ...(env.SLACK_SIGNING_SECRET === undefined ? {} : { signingSecret: env.SLACK_SIGNING_SECRET }),
          // The Events API receiver listens next to the web channel.
          port: overrides.slackPort ?? config.web.port + 1,
          host: config.web.host,
          maxBodyBytes: config.web.max_body_kb * 1024,
          botName: 'ebb',
          logger,
          ...(slackApiUrl === undefined ? {} : { slackApiUrl }),
        }),
      );
    }
    if (env.DISCORD_TOKEN !== undefined) {
      const { DiscordAdapter } = await import('@ebb/discord');
      adapters.push(
        new DiscordAdapter({
          token: env.DISCORD_TOKEN,
          botName: 'ebb',
          logger,
          ...(overrides.discordRestApi === undefined ? {} : { restApi: overrides.discordRestApi }),
        }),
      );
    }
    if (adapters.length === 1) {
      logger.info(
        { event: 'ebb.fallback', part: 'platforms' },
        'no Slack or Discord token: only the web channel runs',
      );
    }

    const bot = new Bot({
      config: options.config,
      ...stores,
      queue,
      notifier,
      chatModel,
      logger,
      onEvent,
      onTurn: (turn) => {
        metrics.onTurn(turn);
        feed.onTurn(turn);
      },
      toolbox,
      onToolCall: metrics.onToolCall,
      // The summaries a deletion writes again: the channel's summarizer, as a worker's pass has it.
      passSettings: passSettingsResolver({
        config: options.config,
        env,
        log: logger,
        wrap: (s) => meteredSummarizer(s, metrics.onLlmCalls),
        ...(options.llmRetry === undefined ? {} : { retry: options.llmRetry }),
      }),
      onMessageChange: metrics.onMessageChange,
      spool,
      ...(claims === undefined ? {} : { claims }),
    });
    // A platform that cannot connect for now (DNS, network, the platform down) runs degraded and is
    // retried in the background; a refused token stops the start (see start-failure.ts).
    await bot.start(adapters, {
      degradable: (err) => describeStartFailure(err).kind !== 'refused',
      ...options.platformRetry,
    });
    degraded = () => bot.degradedPlatforms();
    contextCache = () => bot.contextCache();
    metrics.observeContextCache(contextCache);
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
    onClose(() => bot.stop(graceMs), graceMs + TURN_CUT_OFF_MS + SHUTDOWN_STEP_MS);
    logger.info({ event: 'ebb.started', url: web.url }, `Ebb is up: the web channel is at ${web.url}`);
    return { bot, web, adapters, embedded: { database: embeddedDatabase, queue: !useRedis, offline }, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * The web channel is open only as far as the settings say: a `[web] host` beyond loopback without
 * EBB_ADMIN_TOKEN refuses to start unless `[web] public_api` opens the API on purpose (a warning at
 * every start).
 */
function checkExposure(options: StartOptions, logger: Logger): void {
  const { env } = options;
  const settings = options.config().web;
  const exposed = exposure({
    host: settings.host,
    port: settings.port,
    adminToken: env.EBB_ADMIN_TOKEN,
    publicApi: settings.public_api,
  });
  switch (exposed.kind) {
    case 'refused':
      throw new StartRefusedError(exposed.reason, exposed.hint);
    case 'open_api':
      logger.warn({ event: 'web.public_api' }, exposed.warning);
      break;
    case 'private':
      break;
  }
}

function webAdapter(options: StartOptions): WebAdapter {
  const { env } = options;
  const settings = options.config().web;
  return new WebAdapter({
    host: settings.host,
    port: options.webPort ?? settings.port,
    access: {
      adminToken: env.EBB_ADMIN_TOKEN,
      metricsToken: env.EBB_METRICS_TOKEN,
      publicApi: settings.public_api,
    },
    maxBodyBytes: settings.max_body_kb * 1024,
    rateLimit: { perMinute: settings.rate_limit_per_minute, burst: settings.rate_limit_burst },
    logger: options.logger,
  });
}
