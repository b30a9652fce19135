/**
 * The observability part: the metrics, /metrics and /healthz (the checks of what this process
 * reaches, the fallbacks in use, the platforms running degraded, the MCP servers, the context cache),
 * and where compaction events and finished take-backs go. Nothing of its own to stop: it lives on
 * the web channel's server.
 */
import { logCompactionEvent, type TakeBackFinish } from '@ebb/compaction';
import { type CompactionEventSink, platformOf, type TakeBack } from '@ebb/core';
import type { Database } from '@ebb/db';
import {
  createMetrics,
  type EbbMetrics,
  type HealthCheck,
  healthCheck,
  mountObservability,
  postgresCheck,
} from '@ebb/observability';
import type { McpServers } from '@ebb/tools';
import type { WebAdapter } from '@ebb/web';
import type { Bot } from '../bot/bot.js';
import type { DashboardFeed } from '../dashboard/dashboard-feed.js';
import type { StartOptions } from './options.js';

export class Observability {
  readonly metrics: EbbMetrics;
  /** What /healthz checks; the queue part adds Redis when it uses it. */
  readonly checks: Record<string, HealthCheck>;
  readonly #options: StartOptions;
  /** Set once the bot has started: its degraded platforms and context cache show from then on. */
  #bot: Bot | undefined;

  constructor(options: StartOptions, database: Database) {
    this.#options = options;
    this.metrics = createMetrics({
      processMetrics: options.processMetrics ?? true,
      prices: () => options.config().prices,
    });
    this.checks = { database: postgresCheck(database.db) };
  }

  /** Where compaction events go: the log, the metrics, the web channel's stream and the dashboard. */
  compactionEvents(web: WebAdapter, feed: DashboardFeed): CompactionEventSink {
    return (e) => {
      logCompactionEvent(this.#options.logger, e);
      this.metrics.onCompactionEvent(e);
      web.publish(e.channel, { type: 'compaction', ...e });
      feed.onCompactionEvent(e);
    };
  }

  /**
   * Where a take-back this process finished goes (the runner logged it): the dashboard, and a web
   * channel's own stream, which showed its `deleted` or `edited` event with `pending` summaries: a
   * completed one has none left.
   */
  takeBackEvents(
    web: WebAdapter,
    feed: DashboardFeed,
  ): (takeBack: TakeBack, outcome: TakeBackFinish) => void {
    return (takeBack, outcome) => {
      feed.onTakeBackFinished(takeBack, outcome);
      if (platformOf(takeBack.channelKey) !== 'web') return;
      web.publish(takeBack.channelKey, {
        type: 'takeback',
        takeBack: takeBack.id,
        kind: takeBack.kind,
        status: outcome.status,
        ...(outcome.status === 'completed' ? { pending: 0 } : {}),
      });
    };
  }

  /** Mounts /metrics and /healthz on the web channel's server. */
  mount(web: WebAdapter, fallbacks: Readonly<Record<string, boolean>>, mcp: McpServers): void {
    mountObservability(web.app, {
      metrics: this.metrics,
      health: () =>
        healthCheck({
          checks: this.checks,
          fallbacks,
          degraded: this.#bot === undefined ? {} : this.#bot.degradedPlatforms(),
          mcp: mcp.states(),
          ...(this.#bot === undefined ? {} : { contextCache: this.#bot.contextCache() }),
        }),
    });
  }

  /** From now on /healthz and /metrics show the started bot's degraded platforms and context cache. */
  watch(bot: Bot): void {
    this.#bot = bot;
    this.metrics.observeContextCache(() => bot.contextCache());
  }
}
