/**
 * Rules that tie several settings together. They run on merged settings, never on one table alone,
 * because an override is only wrong in combination with what it inherits: a channel that lowers
 * `aggressive_threshold` below the global `background_threshold` breaks the order without ever naming
 * `background_threshold`.
 */
import { limitsOf, type ModelPrice, PLATFORMS, passRoom, priceOf, SHORT_MESSAGE_TOKENS } from '@ebb/core';
import {
  blockIndicesBySpecificity,
  DEFAULTS_CHANNEL_KEY,
  type Layer,
  layerId,
  layerLabel,
  layerLeafPath,
  layersForBlock,
  layersForKey,
  layersForPlatform,
} from './channel-layers.js';
import type { ConfigIssue } from './config-error.js';
import type { EbbConfig } from './ebb-config.js';
import { type LeafKey, leafValue, type MergedSettings, mergeSettings, splitLeaf } from './merge-settings.js';
import {
  backgroundFractionOf,
  backgroundThresholdOf,
  budgetOf,
  worksBelowTheEdge,
} from './resolve-channel.js';
import { isTainted } from './schema-issues.js';
import { formatTomlKey } from './toml-path.js';

/** Holds when the sum of the `below` leaves is strictly less than the sum of the `above` leaves. */
interface CrossFieldRule {
  readonly id: string;
  readonly below: readonly LeafKey[];
  readonly above: readonly LeafKey[];
  /** When several leaves come from the most specific place, the first of them is named. */
  readonly blameOrder: readonly LeafKey[];
}

export const CROSS_FIELD_RULES: readonly CrossFieldRule[] = [
  {
    // 0 < background < aggressive < emergency <= 1; the outer bounds are checked by the schema.
    id: 'background_below_aggressive',
    below: ['compaction.background_threshold'],
    above: ['compaction.aggressive_threshold'],
    blameOrder: ['compaction.background_threshold', 'compaction.aggressive_threshold'],
  },
  {
    id: 'aggressive_below_emergency',
    below: ['compaction.aggressive_threshold'],
    above: ['compaction.emergency_threshold'],
    blameOrder: ['compaction.aggressive_threshold', 'compaction.emergency_threshold'],
  },
  {
    // The reply, a summary and the recalled memories must fit in the window with room to spare.
    id: 'window_holds_reply_summary_recall',
    below: ['llm.max_output_tokens', 'compaction.summary_max_tokens', 'memory.recall_max_tokens'],
    above: ['llm.context_window'],
    blameOrder: [
      'llm.context_window',
      'llm.max_output_tokens',
      'compaction.summary_max_tokens',
      'memory.recall_max_tokens',
    ],
  },
  {
    // One clipped message must still fit beside the reply.
    id: 'message_cap_fits_window',
    below: ['compaction.message_max_tokens', 'llm.max_output_tokens'],
    above: ['llm.context_window'],
    blameOrder: ['compaction.message_max_tokens', 'llm.context_window', 'llm.max_output_tokens'],
  },
];

/**
 * What the file alone cannot count: the channel's system prompt and offered tools, and the block a
 * summary is wrapped in, in its model's tokens. `ebb config check` counts them with the channel's
 * tokenizer; parsing (every command) uses 0 for both, so it refuses only what no prompt could fix.
 */
export interface PromptMeasure {
  /** Tokens of the system message and the definitions of the tools the channel is offered. */
  readonly promptHeadTokens: number;
  /** Tokens of a summary span besides its text (`summarySpanBound(tokenizer, 0)`). */
  readonly summaryFrameTokens: number;
}

const UNMEASURED: PromptMeasure = { promptHeadTokens: 0, summaryFrameTokens: 0 };

/** The settings that decide whether a background pass has anything to free (see `passRoom`), most blamed first. */
const PASS_ROOM_LEAVES: readonly LeafKey[] = [
  'compaction.background_threshold',
  'compaction.working_tokens',
  'llm.context_window',
  'llm.max_output_tokens',
  'memory.recall_max_tokens',
  'compaction.summary_max_tokens',
  'compaction.protect_recent',
  'compaction.background_fraction',
  'compaction.working_fraction',
];

interface Context {
  /** `[slack]`, `[channels."slack:*"]`; undefined for the top-level sections. */
  readonly label: string | undefined;
  readonly layers: readonly Layer[];
  /** `[prices]`: a spend limit counts only calls it can price. */
  readonly prices: Readonly<Record<string, ModelPrice>>;
  /**
   * Every model any place of the file has a channel call (chat, summarizer, cheaper): a workspace
   * limit counts all its channels' calls, so it needs a price for each of them.
   */
  readonly models: () => ReadonlySet<string>;
}

/**
 * Checks the merged settings of every place in the file: the top-level sections, each platform
 * section, each `[channels."<pattern>"]` block (least specific first). A violation is reported once,
 * at the first place it appears, naming the key that was set most specifically.
 */
export function checkConfigRules(
  config: EbbConfig,
  file: string,
  tainted: ReadonlySet<string>,
): ConfigIssue[] {
  const seen = new Set<string>();
  return placesOf(config).flatMap((context) => checkContext(context, file, tainted, seen));
}

/** Every place of the file, least specific first: the top-level sections, each platform section, each block. */
function placesOf(config: EbbConfig): Context[] {
  const { prices } = config;
  const models = fileModels(config);
  return [
    { label: undefined, layers: layersForKey(config, DEFAULTS_CHANNEL_KEY), prices, models },
    ...PLATFORMS.map((platform) => ({
      label: `[${platform}]`,
      layers: layersForPlatform(config, platform),
      prices,
      models,
    })),
    ...blockIndicesBySpecificity(config).map((index) => ({
      label: `[channels.${formatTomlKey(config.channels[index]?.pattern ?? '')}]`,
      layers: layersForBlock(config, index),
      prices,
      models,
    })),
  ];
}

/** The models the merged settings of every place name, read once when a workspace limit asks. */
function fileModels(config: EbbConfig): () => ReadonlySet<string> {
  let models: Set<string> | undefined;
  return () => {
    models ??= new Set(
      placesOf(config).flatMap(({ layers }) => {
        const { llm, compaction, budget } = mergeSettings(layers.map((layer) => layer.settings)).settings;
        return [llm.model, compaction.summarizer_model, budget.cheaper_model].filter(
          (m): m is string => m !== undefined,
        );
      }),
    );
    return models;
  };
}

/**
 * Checks what one concrete channel key resolves to, including overlaps of pattern blocks; with
 * `measure`, whether a pass has room counts the channel's system prompt, tools and summary block too.
 */
export function checkChannel(
  config: EbbConfig,
  channelKey: string,
  file: string,
  measure: PromptMeasure = UNMEASURED,
): ConfigIssue[] {
  const label = channelKey === DEFAULTS_CHANNEL_KEY ? undefined : `channel ${channelKey}`;
  const context = {
    label,
    layers: layersForKey(config, channelKey),
    prices: config.prices,
    models: fileModels(config),
  };
  return checkContext(context, file, new Set(), new Set(), measure);
}

function checkContext(
  context: Context,
  file: string,
  tainted: ReadonlySet<string>,
  seen: Set<string>,
  measure: PromptMeasure = UNMEASURED,
): ConfigIssue[] {
  const merged = mergeSettings(context.layers.map((layer) => layer.settings));
  const issues: ConfigIssue[] = [];
  let broken = false;
  for (const rule of CROSS_FIELD_RULES) {
    const leaves = [...rule.below, ...rule.above];
    const skip = leaves.some((leaf) =>
      context.layers.some((layer) => isTainted(tainted, layerId(layer.source), leaf)),
    );
    if (skip || sum(merged, rule.below) < sum(merged, rule.above)) continue;
    broken = true;

    const fingerprint = [
      rule.id,
      ...leaves.map((leaf) => `${where(context, merged, leaf)}=${value(merged, leaf)}`),
    ];
    const key = fingerprint.join('\n');
    if (seen.has(key)) continue;
    seen.add(key);

    const blamed = rule.blameOrder.reduce((best, leaf) =>
      merged.origin[leaf] > merged.origin[best] ? leaf : best,
    );
    const suffix = context.label === undefined ? '' : ` in the merged settings for ${context.label}`;
    issues.push({
      file,
      path: where(context, merged, blamed),
      rule: `${explain(rule, blamed, context, merged)}${suffix}`,
      found: value(merged, blamed),
    });
  }
  // A window that cannot even hold the reply, a summary and the recall budget says so once.
  const room = broken ? undefined : checkPassRoom(context, merged, file, tainted, measure);
  for (const found of [room, checkBudget(context, merged, file)]) {
    if (found && !seen.has(found.fingerprint)) {
      seen.add(found.fingerprint);
      issues.push(found.issue);
    }
  }
  return issues;
}

/**
 * `[budget]` that cannot be kept: `over = "cheaper_model"` naming no model, or a limit in dollars on
 * a channel whose calls `[prices]` cannot price (its chat model, its summarizer, the cheaper model).
 */
function checkBudget(
  context: Context,
  merged: MergedSettings,
  file: string,
): { issue: ConfigIssue; fingerprint: string } | undefined {
  const { budget, llm, compaction } = merged.settings;
  const suffix = context.label === undefined ? '' : ` in the merged settings for ${context.label}`;
  // Only where a limit is set: `over` alone (a default for the channels that set one) does nothing.
  const limits = limitsOf(budgetOf(budget));
  if (limits.length === 0) return undefined;
  if (budget.over === 'cheaper_model' && budget.cheaper_model === undefined) {
    const path = where(context, merged, 'budget.over');
    const rule = `is "cheaper_model", so budget.cheaper_model must name the model to answer on${suffix}`;
    return { issue: { file, path, rule, found: 'cheaper_model' }, fingerprint: `budget_model\n${path}` };
  }
  // A workspace's limit counts every channel of it: any model the file has a channel call.
  const workspace = limits.some((l) => l.scope === 'workspace');
  const models = [
    llm.model,
    compaction.summarizer_model,
    budget.cheaper_model,
    ...(workspace ? context.models() : []),
  ];
  const unpriced = [...new Set(models)].filter(
    (m): m is string => m !== undefined && priceOf(context.prices, m) === undefined,
  );
  if (unpriced.length === 0) return undefined;
  const leaf = BUDGET_LIMIT_LEAVES.reduce((best, l) => (merged.origin[l] > merged.origin[best] ? l : best));
  const path = where(context, merged, leaf);
  const rule =
    `needs [prices] for ${unpriced.map((m) => JSON.stringify(m)).join(' and ')}${suffix}: a limit in dollars ` +
    `counts only calls it can price (add [prices."${unpriced[0]}"] with input_per_mtok and output_per_mtok)`;
  return {
    issue: { file, path, rule, found: leafValue(merged.settings, leaf) as number },
    fingerprint: ['budget_prices', path, ...unpriced].join('\n'),
  };
}

/** The limits of `[budget]`, most specific first when blamed. */
const BUDGET_LIMIT_LEAVES: readonly LeafKey[] = [
  'budget.daily_usd',
  'budget.monthly_usd',
  'budget.workspace_daily_usd',
  'budget.workspace_monthly_usd',
];

/**
 * A window whose reserve leaves a background pass nothing to free (`passRoom`): the recall budget,
 * the system prompt and the tools take so much of the prompt at the background threshold that a
 * pass freeing `background_fraction` of the conversation besides its summary does not fit. Every
 * pass would then free little or nothing and the channel would live on emergency truncations.
 */
function checkPassRoom(
  context: Context,
  merged: MergedSettings,
  file: string,
  tainted: ReadonlySet<string>,
  measure: PromptMeasure,
): { issue: ConfigIssue; fingerprint: string } | undefined {
  const skip = PASS_ROOM_LEAVES.some((leaf) =>
    context.layers.some((layer) => isTainted(tainted, layerId(layer.source), leaf)),
  );
  if (skip) return undefined;
  const { llm, compaction, memory } = merged.settings;
  const room = passRoom({
    contextWindow: llm.context_window,
    maxOutputTokens: llm.max_output_tokens,
    reservedTokens: memory.recall_max_tokens + measure.promptHeadTokens,
    backgroundThreshold: backgroundThresholdOf(compaction, llm),
    backgroundFraction: backgroundFractionOf(compaction, llm),
    summaryTokens: compaction.summary_max_tokens + measure.summaryFrameTokens,
    protectRecent: compaction.protect_recent,
  });
  if (room.fits) return undefined;

  const threshold = backgroundThresholdOf(compaction, llm);
  const working = worksBelowTheEdge(compaction, llm);
  // Of the two fractions, only the one in effect can be to blame.
  const fractionKey: LeafKey = working ? 'compaction.working_fraction' : 'compaction.background_fraction';
  const unused: LeafKey = working ? 'compaction.background_fraction' : 'compaction.working_fraction';
  const blamed = PASS_ROOM_LEAVES.filter((leaf) => leaf !== unused).reduce((best, leaf) =>
    merged.origin[leaf] > merged.origin[best] ? leaf : best,
  );
  const term = (leaf: LeafKey) => describe(leaf, blamed, context, merged);
  const { promptHeadTokens: head, summaryFrameTokens: frame } = measure;
  const prompt = Math.floor(threshold * (llm.context_window - llm.max_output_tokens) + 1e-6);
  const suffix = context.label === undefined ? '' : ` in the merged settings for ${context.label}`;
  const start = working
    ? `at ${term('compaction.working_tokens')} prompt tokens, `
    : `at ${term('compaction.background_threshold')}, ` +
      `(${term('llm.context_window')} - ${term('llm.max_output_tokens')}) × ${compaction.background_threshold} = ${prompt} prompt tokens `;
  const rule =
    `leaves a background pass nothing to free${suffix}: ${start}` +
    `less the reserve (${term('memory.recall_max_tokens')}${head > 0 ? ` + the system prompt and tools (${head})` : ''}) ` +
    `leave ${room.conversationTokens} of conversation; a pass must free at least half of ${term(fractionKey)} of it ` +
    `besides a summary of up to ${term('compaction.summary_max_tokens')}${frame > 0 ? ` + ${frame} for its block` : ''} ` +
    `and the ${term('compaction.protect_recent')} newest messages (${SHORT_MESSAGE_TOKENS} tokens each), so it needs ${room.neededTokens}. ` +
    `Raise ${working ? 'compaction.working_tokens' : 'llm.context_window or compaction.background_threshold'}, or lower llm.max_output_tokens, ` +
    'memory.recall_max_tokens, compaction.summary_max_tokens or compaction.protect_recent' +
    (head > 0 ? ' (or shorten bot.system_prompt, or allow fewer tools)' : '');
  const fingerprint = [
    'pass_room',
    head,
    frame,
    ...PASS_ROOM_LEAVES.map((leaf) => `${where(context, merged, leaf)}=${value(merged, leaf)}`),
  ].join('\n');
  const issue = { file, path: where(context, merged, blamed), rule, found: value(merged, blamed) };
  return { issue, fingerprint };
}

function explain(rule: CrossFieldRule, blamed: LeafKey, context: Context, merged: MergedSettings): string {
  const term = (leaf: LeafKey) => describe(leaf, blamed, context, merged);
  const blamedBelow = rule.below.includes(blamed);
  const side = blamedBelow ? rule.above : rule.below;
  const others = (blamedBelow ? rule.below : rule.above).filter((leaf) => leaf !== blamed);
  const terms = side.map(term).join(' + ');
  const expression = others.length === 0 ? terms : `${terms} - ${others.map(term).join(' - ')}`;
  const bound = sum(merged, side) - sum(merged, others);
  const total = side.length + others.length > 1 ? ` = ${bound}` : '';
  return `must be ${blamedBelow ? 'below' : 'above'} ${expression}${total}`;
}

/** `aggressive_threshold (0.85, default)`; the section is named when it differs from the blamed key's. */
function describe(leaf: LeafKey, blamed: LeafKey, context: Context, merged: MergedSettings): string {
  const [section, key] = splitLeaf(leaf);
  const name = section === splitLeaf(blamed)[0] ? key : leaf;
  const source = context.layers[merged.origin[leaf]]?.source;
  const from = source === undefined ? 'default' : `from ${layerLabel(source, section)}`;
  return `${name} (${value(merged, leaf)}, ${from})`;
}

function where(context: Context, merged: MergedSettings, leaf: LeafKey): string {
  const [section, key] = splitLeaf(leaf);
  return layerLeafPath(context.layers[merged.origin[leaf]]?.source, section, key);
}

function value(merged: MergedSettings, leaf: LeafKey): number {
  return leafValue(merged.settings, leaf) as number;
}

function sum(merged: MergedSettings, leaves: readonly LeafKey[]): number {
  return leaves.reduce((total, leaf) => total + value(merged, leaf), 0);
}
