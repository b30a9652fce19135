/**
 * The dashboard's data (`DashboardSource` of `@ebb/web`), read from the bot's stores:
 *
 * - the list: one `listChannels` query for every channel of every platform (its tokens, last
 *   activity and calibration come with it) and one grouped count of the take-backs still pending,
 *   usage computed as `ebb status` does, no query per channel;
 * - a channel: its row (`channelSummary`, one row however many channels there are), its status
 *   (`loadChannelStatus`: spans, the last passes, its pending take-backs) and its top memories;
 * - history: the archive's messages of a seq range (`readArchive`) placed against the prefix
 *   (`loadPrefix`), see `dashboard-history.ts`;
 * - usage over time: the in-memory `UsageSeries` the bot feeds from turns, microcompactions and
 *   truncations, and, before it starts (a restart) or for passes run by a worker elsewhere, the run
 *   store: each pass's usage at trigger and, from its tokens after, the usage it left;
 * - live events: those of the bot's `DashboardFeed`;
 * - a suggestion: `ebb simulate --suggest` on the channel's last messages (`dashboard-suggestion.ts`).
 *
 * Usage counts the tool definitions a channel is offered as the bot does (`offeredTools`, the
 * running bot's MCP tools included), so a row and the bot's turn events agree.
 */
import { type EbbConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveReader,
  type ChannelDirectory,
  ChannelSpend,
  type ChannelSummary,
  type CompactorSettings,
  type MemoryStore,
  memoryScope,
  type PendingTakeBacks,
  RUNS_LOOKBACK,
  type RunStore,
  type TakeBackLog,
  type TurnLog,
  thresholdReached,
  UNCALIBRATED,
  type UsageStore,
  usageOf,
} from '@ebb/core';
import {
  DASHBOARD_LIMITS,
  type DashboardChannelDetail,
  type DashboardChannelRow,
  type DashboardEvent,
  type DashboardSource,
  type DashboardSuggestion,
  type DashboardThresholds,
  type DashboardUsage,
  type DashboardUsageMark,
  type DashboardUsagePoint,
  type HistoryPage,
} from '@ebb/web';
import {
  describeTakeBacks,
  loadChannelStatus,
  loadCompactorSettings,
  type TakeBacksStatus,
} from '../status/channel-status.js';
import type { OfferedTools } from '../status/offered-tools.js';
import { builtInToolTokens } from '../status/prompt-measure.js';
import type { DashboardFeed } from './dashboard-feed.js';
import { describeHistory, historyRange } from './dashboard-history.js';
import { ChannelSuggestions } from './dashboard-suggestion.js';

export interface DashboardStores {
  readonly config: () => EbbConfig;
  readonly channels: ChannelDirectory &
    Pick<ArchiveReader, 'loadPrefix' | 'readArchive'> &
    Pick<TurnLog, 'calibration'>;
  readonly runs: Pick<RunStore, 'recent'>;
  readonly memories: Pick<MemoryStore, 'list' | 'count'>;
  /** The take-backs still pending, as Postgres has them: any process's, so right across processes. */
  readonly takeBacks: Pick<TakeBackLog, 'pendingTakeBackCounts'>;
  /** Each channel's recorded model calls: the last day's tokens, cache share and cost. */
  readonly usage?: Pick<UsageStore, 'totalsSince' | 'totalsIn'>;
  /** The bot's live feed: the usage series and the events. */
  readonly feed: DashboardFeed;
  /**
   * The tools a channel is offered: usage here counts their tokens as the bot's does (without it,
   * the built-in ones the channel allows).
   */
  readonly offeredTools?: OfferedTools;
}

/** How long one `listChannels` answer (and its take-back counts) serves the list requests of every open page. */
const LIST_TTL_MS = 500;

/** What the list reads: every channel's row, and the take-backs pending by channel. */
interface ListRead {
  readonly summaries: ChannelSummary[];
  readonly takeBacks: ReadonlyMap<string, PendingTakeBacks>;
}

export class StoreDashboardSource implements DashboardSource {
  readonly #stores: DashboardStores;
  readonly #now: () => number;
  #list: { readonly at: number; readonly read: Promise<ListRead> } | undefined;
  readonly #suggestions: ChannelSuggestions;
  /** Kept across requests: a channel's (or workspace's) closed hours are read once an hour. */
  readonly #spend: ChannelSpend | undefined;

  constructor(stores: DashboardStores) {
    this.#stores = stores;
    this.#now = stores.feed.now;
    const { usage } = stores;
    this.#spend = usage && new ChannelSpend({ usage, prices: () => stores.config().prices });
    this.#suggestions = new ChannelSuggestions({ ...stores, now: stores.feed.now });
  }

  subscribe(listener: (event: DashboardEvent) => void): () => void {
    return this.#stores.feed.subscribe(listener);
  }

  // Reads.

  async channels(): Promise<DashboardChannelRow[]> {
    const config = this.#stores.config();
    const systemTokens = new Map<string, Promise<number>>();
    const { summaries, takeBacks } = await this.#listRead();
    return Promise.all(
      summaries.map(async (summary) => {
        const compactor = await this.#compactor(resolveChannel(config, summary.key), systemTokens);
        return row(summary, compactor, describeTakeBacks(takeBacks.get(summary.key)));
      }),
    );
  }

  /** `ebb simulate --suggest` on the channel's last messages (`dashboard-suggestion.ts`). */
  suggestion(key: string): Promise<DashboardSuggestion | undefined> {
    return this.#suggestions.suggestion(key);
  }

  async channel(key: string): Promise<DashboardChannelDetail | undefined> {
    const summary = await this.#summary(key);
    if (summary === undefined) return undefined;
    const config = this.#stores.config();
    const settings = resolveChannel(config, key);
    const [status, compactor] = await Promise.all([
      loadChannelStatus(this.#stores, config, summary, {
        now: this.#now,
        ...(this.#spend ? { spend: this.#spend } : {}),
      }),
      this.#compactor(settings),
    ]);
    const memories = await this.#stores.memories.list(
      { scope: memoryScope(key, settings.memory.scope) },
      { order: 'importance', limit: DASHBOARD_LIMITS.memories },
    );
    return {
      ...row(summary, compactor, status.takeBacks ?? describeTakeBacks(undefined)),
      spans: status.spans,
      inContext: status.messages.inContext,
      ...(status.microcompaction === undefined ? {} : { microcompaction: status.microcompaction }),
      passes: status.passes.map((p) => ({
        jobId: p.jobId,
        tier: p.tier,
        status: p.status,
        usage: p.usage,
        fromSeq: p.fromSeq,
        toSeq: p.toSeq,
        tokensBefore: p.tokensBefore,
        tokensAfter: p.tokensAfter,
        summaryTokens: p.summaryTokens,
        memoriesAdded: p.memoriesAdded,
        fallback: p.fallback,
        model: p.model,
        durationMs: p.durationMs,
        error: p.error,
        createdAt: p.createdAt,
        finishedAt: p.finishedAt,
      })),
      memories: memories.map((m) => ({
        type: m.type,
        text: m.text,
        importance: Math.round(m.importance * 100) / 100,
        ...(m.speaker === undefined ? {} : { speaker: m.speaker }),
      })),
      memoryCount: status.memories.count,
      lastDay: status.lastDay,
      budget: status.budget?.map((l) => ({ ...l, resetsAt: l.resetsAt.toISOString() })) ?? null,
    };
  }

  async history(key: string, page: HistoryPage) {
    const prefix = await this.#stores.channels.loadPrefix(key);
    if (prefix.headSeq === 0 && (await this.#summary(key)) === undefined) return undefined;
    const { fromSeq, toSeq } = historyRange(page, prefix.headSeq);
    const messages = toSeq >= fromSeq ? await this.#stores.channels.readArchive(key, fromSeq, toSeq) : [];
    return describeHistory({ key, headSeq: prefix.headSeq, fromSeq, toSeq, spans: prefix.spans, messages });
  }

  async usage(key: string): Promise<DashboardUsage | undefined> {
    const summary = await this.#summary(key);
    if (summary === undefined) return undefined;
    const [compactor, runs] = await Promise.all([
      this.#compactor(resolveChannel(this.#stores.config(), key)),
      this.#stores.runs.recent(key, RUNS_LOOKBACK),
    ]);
    const calibration = summary.calibration ?? UNCALIBRATED;
    const usageAt = (contextTokens: number) =>
      usageOf({
        contextTokens,
        reservedTokens: compactor.reservedTokens,
        contextWindow: compactor.contextWindow,
        maxOutputTokens: compactor.maxOutputTokens,
        calibration,
      });
    const live = this.#stores.feed.series.read(key);
    const liveFrom = live.points[0]?.at ?? Number.POSITIVE_INFINITY;
    // Passes, oldest first: each rose to its usage at trigger and, done, fell to what its tokens after give.
    const fromRuns: DashboardUsagePoint[] = [];
    const marks: DashboardUsageMark[] = [];
    for (const run of [...runs].reverse()) {
      if (run.createdAt === undefined) continue;
      const usage = Number.isFinite(run.usage)
        ? run.usage
        : run.tokensBefore === undefined
          ? undefined
          : usageAt(run.tokensBefore);
      if (usage === undefined) continue;
      marks.push({ at: run.createdAt, usage, tier: run.tier, status: run.status, jobId: run.jobId });
      if (run.createdAt >= liveFrom) continue;
      fromRuns.push({ at: run.createdAt, usage });
      if (run.status === 'completed' && run.tokensAfter !== undefined && run.finishedAt !== undefined)
        fromRuns.push({ at: Math.min(run.finishedAt, liveFrom), usage: usageAt(run.tokensAfter) });
    }
    for (const m of live.marks)
      marks.push({
        at: m.at,
        usage: m.usage,
        tier: m.kind === 'microcompact' ? 'microcompact' : 'emergency',
        status: m.kind === 'microcompact' ? 'microcompacted' : 'truncated',
      });
    marks.sort((a, b) => a.at - b.at);
    const now = { at: this.#now(), usage: usageAt(summary.tokens) };
    return {
      key,
      thresholds: thresholdsOf(compactor),
      points: [...fromRuns, ...live.points, now],
      marks,
    };
  }

  /** The channel's compactor settings as the bot has them: `loadCompactorSettings` and the tools' room. */
  async #compactor(
    settings: ResolvedChannelConfig,
    systemTokens?: Map<string, Promise<number>>,
  ): Promise<CompactorSettings> {
    const offered = this.#stores.offeredTools;
    return loadCompactorSettings(settings, systemTokens, (tokenizer) =>
      offered === undefined ? builtInToolTokens(settings, tokenizer) : offered.tokensFor(settings, tokenizer),
    );
  }

  async #listRead(): Promise<ListRead> {
    const now = this.#now();
    if (this.#list === undefined || now - this.#list.at > LIST_TTL_MS) {
      const read = Promise.all([
        this.#stores.channels.listChannels(),
        this.#stores.takeBacks.pendingTakeBackCounts(),
      ]).then(([summaries, pending]) => ({
        summaries,
        takeBacks: new Map(pending.map((p) => [p.channelKey, p])),
      }));
      this.#list = { at: now, read };
      // A failed read is not kept.
      read.catch(() => {
        if (this.#list?.read === read) this.#list = undefined;
      });
    }
    return this.#list.read;
  }

  /** One channel's row, read on its own: the detail routes stay flat in the number of channels. */
  #summary(key: string): Promise<ChannelSummary | undefined> {
    return this.#stores.channels.channelSummary(key);
  }
}

function thresholdsOf(compactor: CompactorSettings): DashboardThresholds {
  const policy = compactor.policy;
  return {
    ...(policy.microcompaction
      ? { microcompact: Math.min(policy.microcompactThreshold, policy.backgroundThreshold) }
      : {}),
    background: policy.backgroundThreshold,
    aggressive: policy.aggressiveThreshold,
    emergency: policy.emergencyThreshold,
  };
}

function row(
  summary: ChannelSummary,
  compactor: CompactorSettings,
  takeBacks: TakeBacksStatus,
): DashboardChannelRow {
  const calibration = summary.calibration ?? UNCALIBRATED;
  const usage = usageOf({
    contextTokens: summary.tokens,
    reservedTokens: compactor.reservedTokens,
    contextWindow: compactor.contextWindow,
    maxOutputTokens: compactor.maxOutputTokens,
    calibration,
  });
  const thresholds = thresholdsOf(compactor);
  const budget = compactor.contextWindow - compactor.maxOutputTokens;
  return {
    key: summary.key,
    platform: summary.key.slice(0, summary.key.indexOf(':')),
    usage,
    reached: thresholdReached(usage, thresholds),
    thresholds,
    tokens: {
      context: summary.tokens,
      reserved: compactor.reservedTokens,
      budget,
      calibration: calibration.factor,
      // Usage is the provider's count over the budget.
      provider: Math.round(usage * budget),
    },
    messages: summary.headSeq,
    lastActiveAt: summary.lastActiveAt === undefined ? null : new Date(summary.lastActiveAt).toISOString(),
    takeBacks,
  };
}
