/**
 * A channel's status as every view shows it (`ebb status`, the dashboard, `ebb compact`): usage as the
 * bot computes it against the channel's own three thresholds, tokens, spans, the last passes, the
 * memories in its scope and the take-backs still pending. The model (`describeChannel`) is pure;
 * `loadChannelStatus` reads it from the stores. The views format it.
 */
import { type EbbConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import {
  type ArchiveReader,
  type Calibration,
  type ChannelCost,
  ChannelSpend,
  type ChannelSummary,
  type CompactionRun,
  type CompactorSettings,
  channelCost,
  costUsd,
  type HISTORY_TOOL_NAMES,
  type MemoryStore,
  memoryScope,
  type PendingTakeBacks,
  priceOf,
  type RunStore,
  type Span,
  type SpendAgainstLimit,
  systemPromptTokens,
  type TakeBackKind,
  type TakeBackLog,
  type ThresholdReached,
  type Tier,
  type Tokenizer,
  type TurnLog,
  thresholdReached,
  type UsageStore,
  usageOf,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { isToolAllowed } from '@ebb/tools';
import { builtInToolTokens } from './prompt-measure.js';

/** Passes listed per channel. */
export const RECENT_PASSES = 5;

export interface PassStatus {
  readonly jobId: string;
  readonly tier: Tier;
  readonly status: CompactionRun['status'];
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly usage: number | null;
  readonly tokensBefore: number | null;
  readonly tokensAfter: number | null;
  readonly summaryTokens: number | null;
  readonly memoriesAdded: number | null;
  readonly model: string | null;
  readonly fallback: boolean | null;
  readonly durationMs: number | null;
  readonly costUsd: number | null;
  readonly error: string | null;
  readonly createdAt: string | null;
  readonly finishedAt: string | null;
}

/**
 * A channel's take-backs still pending: until each is complete, summaries over what it took back are
 * set aside or not yet written again (`TakeBackLog`, so any process's count).
 */
export interface TakeBacksStatus {
  readonly pending: number;
  /** The oldest still pending (`createdAt` ISO 8601); null when none is. */
  readonly oldest: { readonly kind: TakeBackKind; readonly createdAt: string } | null;
}

/** A channel's entry of `TakeBackLog.pendingTakeBackCounts` (undefined: none pending) as a status shows it. */
export function describeTakeBacks(pending: PendingTakeBacks | undefined): TakeBacksStatus {
  if (pending === undefined) return { pending: 0, oldest: null };
  const { kind, createdAt } = pending.oldest;
  return { pending: pending.pending, oldest: { kind, createdAt: new Date(createdAt).toISOString() } };
}

export interface SettingStatus {
  readonly key: string;
  readonly value: unknown;
  readonly source: string;
}

/** `Count` is null for a status read with `memoryCounts: false`. */
export interface ChannelStatus<Count extends number | null = number> {
  readonly key: string;
  readonly usage: number;
  readonly reached: ThresholdReached;
  readonly thresholds: {
    readonly background: number;
    readonly aggressive: number;
    readonly emergency: number;
  };
  readonly tokens: {
    readonly context: number;
    readonly reserved: number;
    readonly budget: number;
    readonly calibration: number;
  };
  readonly messages: { readonly archived: number; readonly inContext: number };
  readonly spans: {
    readonly summaries: number;
    readonly truncations: number;
    readonly summaryTokens: number;
  };
  /** Tool results microcompaction has stubbed, ever, and the context tokens that saved (when the store was read). */
  readonly microcompaction?: { readonly stubbed: number; readonly tokensSaved: number };
  readonly generation: number;
  readonly memories: { readonly scope: string; readonly count: Count };
  readonly passes: readonly PassStatus[];
  /**
   * The model calls of the last 24 hours (replies and passes): tokens, the share of reply prompt
   * tokens the provider's cache served, and the cost at `[prices]`; null when not read.
   */
  readonly lastDay: ChannelCost | null;
  /** The take-backs still pending; null when not read. */
  readonly takeBacks: TakeBacksStatus | null;
  /** Each spend limit of `[budget]` with what was spent toward it this period; null with none set, or not read. */
  readonly budget: readonly SpendAgainstLimit[] | null;
  readonly settings: readonly SettingStatus[] | null;
}

/** The stores a status reads. */
export interface StatusStores {
  readonly channels: Pick<ArchiveReader, 'loadPrefix'> & Pick<TurnLog, 'calibration'>;
  readonly runs: Pick<RunStore, 'recent'>;
  readonly memories: Pick<MemoryStore, 'count'>;
  /** Without it a status has no `lastDay` and no `budget`. */
  readonly usage?: Pick<UsageStore, 'totalsSince' | 'totalsIn'>;
  /** Without it a status has no `takeBacks`. */
  readonly takeBacks?: Pick<TakeBackLog, 'pendingTakeBackCounts'>;
}

/** The period a status's `lastDay` covers (from the start of the hour 24 hours ago). */
export const LAST_DAY_MS = 24 * 60 * 60 * 1000;

/** What `loadChannelStatus` may share across the channels of one report. */
export interface ChannelStatusOptions {
  /**
   * One count per memory scope (a workspace scope holds many channels); `false` skips counting, for
   * a view that never shows the count: `memories.count` is then null.
   */
  readonly memoryCounts?: Map<string, Promise<number>> | false | undefined;
  /** The system prompt's tokens per (encoding, prompt): most channels share both. */
  readonly systemTokens?: Map<string, Promise<number>>;
  readonly settingRows?: SettingStatus[] | null;
  /** The clock "the last day" ends at (ms since the epoch; default `Date.now`). */
  readonly now?: () => number;
  /**
   * What the channels have spent toward their limits, shared by the channels of a report (and kept
   * by the dashboard across its requests), so a workspace's closed hours are read once, not once
   * per channel. Default: one for this status alone.
   */
  readonly spend?: ChannelSpend;
}

/** A channel's status read from the stores. */
export async function loadChannelStatus(
  stores: StatusStores,
  config: EbbConfig,
  summary: ChannelSummary,
  options: ChannelStatusOptions & { readonly memoryCounts: false },
): Promise<ChannelStatus<null>>;
export async function loadChannelStatus(
  stores: StatusStores,
  config: EbbConfig,
  summary: ChannelSummary,
  options?: ChannelStatusOptions & { readonly memoryCounts?: Map<string, Promise<number>> | undefined },
): Promise<ChannelStatus>;
export async function loadChannelStatus(
  stores: StatusStores,
  config: EbbConfig,
  summary: ChannelSummary,
  options: ChannelStatusOptions = {},
): Promise<ChannelStatus<number | null>> {
  const key = summary.key;
  const settings = resolveChannel(config, key);
  const scope = memoryScope(key, settings.memory.scope);
  const { memoryCounts = new Map<string, Promise<number>>() } = options;
  const count =
    memoryCounts === false ? null : memoized(memoryCounts, scope, () => stores.memories.count({ scope }));
  const now = (options.now ?? Date.now)();
  const spend =
    options.spend ?? (stores.usage && new ChannelSpend({ usage: stores.usage, prices: () => config.prices }));
  const [compactor, prefix, calibration, runs, usage, takeBacks, budget] = await Promise.all([
    loadCompactorSettings(settings, options.systemTokens),
    stores.channels.loadPrefix(key),
    stores.channels.calibration(key),
    stores.runs.recent(key, RECENT_PASSES),
    stores.usage?.totalsSince(new Date(now - LAST_DAY_MS), [key]),
    stores.takeBacks?.pendingTakeBackCounts(key),
    settings.budget.limited ? spend?.againstLimits(key, settings.budget, now) : undefined,
  ]);
  return describeChannel({
    summary,
    spans: prefix.spans,
    settings,
    compactor,
    calibration,
    runs,
    memories: { scope, count: count === null ? null : await count },
    prices: config.prices,
    lastDay: usage === undefined ? null : channelCost(usage, config.prices),
    takeBacks: takeBacks === undefined ? null : describeTakeBacks(takeBacks[0]),
    budget: budget ?? null,
    settingRows: options.settingRows ?? null,
  });
}

function memoized<V>(cache: Map<string, V>, key: string, make: () => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    cache.set(key, value);
  }
  return value;
}

/**
 * What a channel's compactor runs with: its policy, its window, and the tokens every prompt reserves
 * besides the conversation: the system message (`systemTokens`) and the tool definitions the
 * channel is offered. Not the recall budget: only a turn knows the memories it recalled, and the bot
 * adds those (`BotCompaction.settingsOf`); a reserve for memories no turn sends would leave passes
 * nothing to free in a small window. The bot, `ebb simulate` and every status use this.
 */
export function compactorSettingsOf(
  settings: ResolvedChannelConfig,
  tokenizer: Tokenizer,
  systemTokens: number,
  /** Tokens of the tool definitions the channel is offered (`toolSpecsTokens`): only the bot knows them. */
  toolTokens = 0,
): CompactorSettings {
  return {
    policy: settings.compaction,
    tokenizer,
    contextWindow: settings.llm.contextWindow,
    maxOutputTokens: settings.llm.maxOutputTokens,
    reservedTokens: systemTokens + toolTokens,
    readHistory: mayReadHistory(settings),
  };
}

/** The channel's `[tools] allow` lets it call read_history: microcompaction's stubs then point at it. */
export function mayReadHistory(settings: Pick<ResolvedChannelConfig, 'tools'>): boolean {
  const readHistory: (typeof HISTORY_TOOL_NAMES)[number] = 'read_history';
  return isToolAllowed(settings.tools.allow, readHistory);
}

/**
 * `compactorSettingsOf` with the system message counted by the channel's tokenizer; `systemTokens`
 * keeps the count per (encoding, prompt) across calls. `toolTokens` counts the tool definitions the
 * channel is offered (default: the built-in ones it allows, `builtInToolTokens`).
 */
export async function loadCompactorSettings(
  settings: ResolvedChannelConfig,
  systemTokens = new Map<string, Promise<number>>(),
  toolTokens: (tokenizer: Tokenizer) => number = (tokenizer) => builtInToolTokens(settings, tokenizer),
): Promise<CompactorSettings> {
  const { encoding } = settings.llm;
  const prompt = settings.bot.systemPrompt;
  const tokenizer = await loadTokenizer(encoding);
  const tokens = memoized(systemTokens, JSON.stringify([encoding, prompt]), async () =>
    systemPromptTokens(tokenizer, prompt),
  );
  return compactorSettingsOf(settings, tokenizer, await tokens, toolTokens(tokenizer));
}

export interface DescribeChannelInput<Count extends number | null = number> {
  readonly summary: ChannelSummary;
  readonly spans: readonly Span[];
  readonly settings: ResolvedChannelConfig;
  readonly compactor: CompactorSettings;
  readonly calibration: Calibration;
  readonly runs: readonly CompactionRun[];
  readonly memories: ChannelStatus<Count>['memories'];
  readonly prices: EbbConfig['prices'];
  readonly lastDay?: ChannelCost | null;
  readonly takeBacks?: TakeBacksStatus | null;
  readonly budget?: readonly SpendAgainstLimit[] | null;
  readonly settingRows: readonly SettingStatus[] | null;
}

/** A channel's status from what the stores returned: pure. */
export function describeChannel<Count extends number | null>(
  input: DescribeChannelInput<Count>,
): ChannelStatus<Count> {
  const { summary, compactor } = input;
  const policy = compactor.policy;
  const usage = usageOf({
    contextTokens: summary.tokens,
    reservedTokens: compactor.reservedTokens,
    contextWindow: compactor.contextWindow,
    maxOutputTokens: compactor.maxOutputTokens,
    calibration: input.calibration,
  });
  const summaries = input.spans.filter((s) => s.kind === 'summary');
  const prefixEnd = input.spans.at(-1)?.toSeq ?? 0;
  const thresholds = {
    background: policy.backgroundThreshold,
    aggressive: policy.aggressiveThreshold,
    emergency: policy.emergencyThreshold,
  };
  return {
    key: summary.key,
    usage,
    reached: thresholdReached(usage, thresholds),
    thresholds,
    tokens: {
      context: summary.tokens,
      reserved: compactor.reservedTokens,
      budget: compactor.contextWindow - compactor.maxOutputTokens,
      calibration: input.calibration.factor,
    },
    messages: { archived: summary.headSeq, inContext: Math.max(0, summary.headSeq - prefixEnd) },
    spans: {
      summaries: summaries.length,
      truncations: input.spans.length - summaries.length,
      summaryTokens: summaries.reduce((n, s) => n + s.tokens, 0),
    },
    ...(summary.microcompaction === undefined ? {} : { microcompaction: summary.microcompaction }),
    generation: summary.generation,
    memories: input.memories,
    passes: input.runs.map((run) => describePass(run, input.prices)),
    lastDay: input.lastDay ?? null,
    takeBacks: input.takeBacks ?? null,
    budget: input.budget ?? null,
    settings: input.settingRows,
  };
}

function describePass(run: CompactionRun, prices: EbbConfig['prices']): PassStatus {
  const price = priceOf(prices, run.model);
  const cost =
    price === undefined || run.inputTokens === undefined || run.outputTokens === undefined
      ? null
      : costUsd({ input: run.inputTokens, output: run.outputTokens }, price);
  return {
    jobId: run.jobId,
    tier: run.tier,
    status: run.status,
    fromSeq: run.fromSeq,
    toSeq: run.toSeq,
    usage: Number.isFinite(run.usage) ? run.usage : null,
    tokensBefore: run.tokensBefore ?? null,
    tokensAfter: run.tokensAfter ?? null,
    summaryTokens: run.summaryTokens ?? null,
    memoriesAdded: run.memoriesAdded ?? null,
    model: run.model ?? null,
    fallback: run.fallback ?? null,
    durationMs: run.durationMs ?? null,
    costUsd: cost,
    error: run.error ?? null,
    createdAt: run.createdAt === undefined ? null : new Date(run.createdAt).toISOString(),
    finishedAt: run.finishedAt === undefined ? null : new Date(run.finishedAt).toISOString(),
  };
}
