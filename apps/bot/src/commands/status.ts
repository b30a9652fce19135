/**
 * `ebb status [--channel KEY] [--json] [--config PATH] [--embedded]`: every channel (or one) as the
 * bot sees it: usage against the channel's own three thresholds as a bar, tokens, spans, the last
 * passes with their outcome and duration, the memories in its scope, the take-backs (deletions,
 * edits, forgets) still being completed, by any process; for one channel also the
 * settings that drive compaction and where each value came from (default, a section, a platform
 * section or a `[channels."<pattern>"]` block). Usage is computed as the bot computes it: (context
 * tokens + system prompt tokens + built-in tool tokens) × the channel's calibration, over the context
 * window minus the output reserve; the bot adds the memories its last turn recalled, which only it
 * knows.
 *
 * `--json` prints one JSON document instead. Its fields are stable; absent values are `null`, never
 * missing:
 *
 *   {
 *     "config": string | null,            // the config file read; null: built-in defaults
 *     "channels": [{                       // by key; only the asked channel with --channel
 *       "key": string,
 *       "usage": number,                   // share of the prompt budget in use (1 = full), calibrated
 *       "reached": "none" | "background" | "aggressive" | "emergency",  // the highest threshold usage has reached
 *       "thresholds": { "background": number, "aggressive": number, "emergency": number },
 *       "tokens": {
 *         "context": number,               // active spans + raw messages, as stored
 *         "reserved": number,              // system prompt + built-in tools (the bot adds recalled memories)
 *         "budget": number,                // llm.context_window - llm.max_output_tokens
 *         "calibration": number            // factor on our count from the provider's reports (1: none yet)
 *       },
 *       "messages": { "archived": number, "inContext": number },
 *       "spans": { "summaries": number, "truncations": number, "summaryTokens": number },
 *       "microcompaction": { "stubbed": number, "tokensSaved": number },  // tool results stubbed, ever
 *       "generation": number,              // bumped by every splice and truncation
 *       "memories": { "scope": string, "count": number },
 *       "passes": [{                       // newest first, at most RECENT_PASSES
 *         "jobId": string, "tier": "background" | "aggressive" | "emergency",
 *         "status": "queued" | "running" | "completed" | "failed" | "stale" | "skipped",
 *         "fromSeq": number, "toSeq": number,
 *         "usage": number | null,          // usage when triggered
 *         "tokensBefore": number | null, "tokensAfter": number | null, "summaryTokens": number | null,
 *         "memoriesAdded": number | null, "model": string | null, "fallback": boolean | null,
 *         "durationMs": number | null, "costUsd": number | null,  // cost from [prices."<model>"]
 *         "error": string | null,
 *         "createdAt": string | null, "finishedAt": string | null  // ISO 8601
 *       }],
 *       "lastDay": {                       // model calls of the last 24 hours, replies and passes
 *         "calls": number, "promptTokens": number, "cachedTokens": number, "completionTokens": number,
 *         "replyCacheShare": number | null,  // cachedTokens / promptTokens of the replies (0..1)
 *         "replies": number,               // turns answered
 *         "coldReplyShare": number | null,   // share of replies after a silence longer than cache_ttl_seconds (0..1)
 *         "usdPer1kReplies": number | null,  // the replies' calls at [prices] per 1,000 replies
 *         "costUsd": number | null,        // at [prices."<model>"]; null when a model used is unpriced
 *         "unpriced": string[]             // the models with calls and no [prices."<model>"]
 *       } | null,
 *       "budget": [{                       // each [budget] limit, with the spend toward it; null with none set
 *         "scope": "channel" | "workspace", "period": "day" | "month",
 *         "limitUsd": number, "spentUsd": number, "resetsAt": string  // ISO 8601, UTC
 *       }] | null,
 *       "takeBacks": {                     // deletions, edits, forgets and retention sweeps not yet complete
 *         "pending": number,               // (their summaries are set aside or not yet written again)
 *         "oldest": { "kind": "deleted" | "edited" | "forget" | "retention", "createdAt": string } | null
 *       },
 *       "settings": [{ "key": string, "value": unknown, "source": string }] | null  // with --channel only
 *     }],
 *     "mcp": [{                            // each of [mcp.servers]; [] when none
 *       "name": string, "transport": "stdio" | "http",
 *       "state": { "status": "starting" | "ready" | "restarting" | "failed", "tools": number,
 *                  "restarts": number } | null  // null: Ebb not reachable; errors are in its log (mcp.server_failed)
 *     }],
 *     "contextCache": {                     // the running bot's working-context cache; null: Ebb not reachable
 *       "hits": number, "misses": number,   // turns since it started whose channel was / was not in memory
 *       "reloads": number,                  // cached channels read again whole (a new generation)
 *       "deltaLoads": number,               // cached channels brought level by other replicas' appends alone
 *       "evictions": number,                // channels dropped to stay within the budget
 *       "channels": number, "bytes": number,  // held now (bytes estimated)
 *       "budgetBytes": number               // [bot] context_cache_mb
 *     } | null
 *   }
 */
import { DERIVED_DEFAULTS, type EbbConfig, explainChannel, formatTomlValue, type LeafKey } from '@ebb/config';
import { ChannelSpend, resetText, TAKE_BACK_KIND_WORDS } from '@ebb/core';
import { isLlmRefusal } from '@ebb/llm';
import type { ContextCacheStats } from '@ebb/observability';
import { usageBar } from '../bot/context-report.js';
import {
  type ChannelStatus,
  loadChannelStatus,
  type PassStatus,
  type SettingStatus,
} from '../status/channel-status.js';
import type { CommandIo } from './io.js';
import { formatContextCache, readLiveHealth } from './live-health.js';
import { formatMcpStatus, type McpServerStatusRow, mcpServerStatus } from './mcp-status.js';
import { readConfig, type StoreCommandDeps, withStores } from './store-session.js';

export interface StatusArgs {
  /** `--channel KEY`: one channel, with its settings and their sources. */
  readonly channel?: string | undefined;
  /** `--json`: one JSON document (see the top of this file). */
  readonly json?: boolean | undefined;
  /** `--config PATH`; otherwise `EBB_CONFIG`, otherwise `./config.toml`. */
  readonly config?: string | undefined;
  /** `--embedded`: read the embedded database (only while Ebb is stopped). */
  readonly embedded?: boolean | undefined;
}

/** The settings `--channel` shows: what decides usage, what a pass does and how long the cache keeps a prompt. */
const STATUS_SETTINGS = [
  'compaction.working_tokens',
  'compaction.working_fraction',
  'compaction.background_threshold',
  'compaction.aggressive_threshold',
  'compaction.emergency_threshold',
  'compaction.background_fraction',
  'compaction.aggressive_fraction',
  'compaction.emergency_fraction',
  'compaction.protect_recent',
  'compaction.cooldown_seconds',
  'compaction.max_ineffective_passes',
  'compaction.summary_max_tokens',
  'compaction.summarizer_model',
  'llm.model',
  'llm.context_window',
  'llm.max_output_tokens',
  'llm.prompt_cache_retention',
  'llm.cache_ttl_seconds',
  'memory.scope',
  'memory.recall_max_tokens',
] as const satisfies readonly LeafKey[];

export interface StatusReport {
  readonly config: string | null;
  readonly channels: readonly ChannelStatus[];
  readonly mcp: readonly McpServerStatusRow[];
  readonly contextCache: ContextCacheStats | null;
}

const EMBEDDED_HINT = 'In a channel, /context shows the same for that channel.';

export async function status(args: StatusArgs, io: CommandIo, deps: StoreCommandDeps = {}): Promise<number> {
  const command = 'ebb status';
  const config = await readConfig(command, args.config, io, deps);
  if (typeof config === 'number') return config;
  const options = { command, embeddedHint: EMBEDDED_HINT, embedded: args.embedded };
  return withStores(options, io, deps, async (session) => {
    const all = await session.channels.listChannels();
    let chosen = all;
    if (args.channel !== undefined) {
      const key = args.channel;
      chosen = all.filter((c) => c.key === key);
      if (chosen.length === 0) {
        io.err(`ebb status: no channel ${key} in the database (no message of it was ever stored).`);
        const near = all.filter((c) => c.key.startsWith(key)).slice(0, 5);
        if (near.length > 0) io.err(`Channels that start with it: ${near.map((c) => c.key).join(', ')}`);
        return 1;
      }
    }
    const memoryCounts = new Map<string, Promise<number>>();
    const systemTokens = new Map<string, Promise<number>>();
    const channels: ChannelStatus[] = [];
    const stores = { ...session, takeBacks: session.channels.takeBacks };
    const spend = new ChannelSpend({ usage: session.usage, prices: () => config.prices });
    for (const summary of chosen) {
      channels.push(
        await loadChannelStatus(stores, config, summary, {
          memoryCounts,
          systemTokens,
          spend,
          settingRows: args.channel !== undefined ? settingRows(config, summary.key) : null,
        }),
      );
    }
    const live = await readLiveHealth(config);
    const report: StatusReport = {
      config: config.file,
      channels,
      mcp: mcpServerStatus(config, live),
      contextCache: live?.contextCache ?? null,
    };
    if (args.json) io.out(JSON.stringify(report, null, 2));
    else {
      const lines = [
        ...formatStatus(report),
        ...formatMcpStatus(report.mcp),
        ...formatContextCache(report.contextCache),
      ];
      for (const line of lines) io.out(line);
    }
    return 0;
  });
}

/** The settings `--channel` shows, as `ebb config check` explains them. */
function settingRows(config: EbbConfig, channelKey: string): SettingStatus[] {
  const wanted: ReadonlySet<string> = new Set(STATUS_SETTINGS);
  const derived = DERIVED_DEFAULTS as Readonly<Record<string, string>>;
  return explainChannel(config, channelKey)
    .settings.filter((row) => wanted.has(row.key))
    .map((row) => ({
      key: row.key,
      value: row.value,
      // `default` says little for a derived default: say how it was derived.
      source:
        row.source === 'default' && derived[row.key] !== undefined
          ? `default (${derived[row.key]})`
          : row.source,
    }));
}

/** The text form: a header, then a block per channel. */
function formatStatus(report: StatusReport): string[] {
  const lines = [`config: ${report.config ?? 'built-in defaults (no config.toml found)'}`];
  if (report.channels.length === 0) {
    lines.push('no channels yet: a channel appears here once Ebb has stored a message of it');
    return lines;
  }
  lines.push(`${report.channels.length} channel${report.channels.length === 1 ? '' : 's'}`);
  for (const channel of report.channels) lines.push('', ...formatChannel(channel));
  return lines;
}

function formatChannel(c: ChannelStatus): string[] {
  const t = c.thresholds;
  const calibrated = c.tokens.calibration === 1 ? '' : `, calibration ×${c.tokens.calibration.toFixed(2)}`;
  const lines = [
    `${c.key}  ${usageBar(c.usage, [t.background, t.aggressive, t.emergency])} ${(c.usage * 100).toFixed(1)}%` +
      `  (background ${pct(t.background)}, aggressive ${pct(t.aggressive)}, emergency ${pct(t.emergency)}` +
      `${c.reached === 'none' ? '' : `; past ${c.reached}`})`,
    `  tokens    ${num(c.tokens.context + c.tokens.reserved)} of ${num(c.tokens.budget)}: context ${num(c.tokens.context)}` +
      ` + system prompt and tools ${num(c.tokens.reserved)}${calibrated}`,
    `  messages  ${num(c.messages.archived)} archived, ${num(c.messages.inContext)} in the context; generation ${c.generation}`,
    `  spans     ${plural(c.spans.summaries, 'summary', 'summaries')} (${num(c.spans.summaryTokens)} tokens), ` +
      `${plural(c.spans.truncations, 'pending truncation', 'pending truncations')}`,
    `  stubs     ${plural(c.microcompaction?.stubbed ?? 0, 'tool result', 'tool results')} microcompacted, ${num(c.microcompaction?.tokensSaved ?? 0)} tokens saved`,
    `  memories  ${num(c.memories.count)} in scope ${c.memories.scope}`,
  ];
  if (c.takeBacks !== null) lines.push(`  take-backs ${formatTakeBacks(c.takeBacks)}`);
  if (c.lastDay !== null) lines.push(`  last day  ${formatLastDay(c.lastDay)}`);
  for (const limit of c.budget ?? []) lines.push(`  budget    ${formatLimit(limit)}`);
  const refusal = refusalOf(c.passes[0]);
  if (refusal !== undefined) {
    lines.push(
      `  ALERT     the model provider refused the newest pass (${refusal}): check OPENAI_API_KEY and the account's credit; passes fail until then`,
    );
  }
  if (c.passes.length === 0) lines.push('  passes    none yet');
  c.passes.forEach((pass, i) => {
    lines.push(`  ${i === 0 ? 'passes  ' : '        '}  ${formatPass(pass)}`);
  });
  if (c.settings !== null) {
    lines.push('  settings');
    const rows = c.settings.map((s) => [s.key, formatTomlValue(s.value), s.source]);
    const width = (i: number) => Math.max(...rows.map((r) => (r[i] ?? '').length));
    for (const [key = '', value = '', source = ''] of rows) {
      lines.push(`    ${key.padEnd(width(0))}  ${value.padEnd(width(1))}  ${source}`);
    }
  }
  return lines;
}

/** `$2.1034 of $3.00 today (this channel); resets 2026-12-05 00:00 UTC`, and `REACHED` once it is. */
function formatLimit(l: NonNullable<ChannelStatus['budget']>[number]): string {
  const period = l.period === 'day' ? 'today' : 'this month';
  const reached = l.spentUsd >= l.limitUsd ? ' REACHED' : '';
  return `$${l.spentUsd.toFixed(4)} of $${l.limitUsd.toFixed(2)} ${period} (this ${l.scope})${reached}; resets ${resetText(l.resetsAt)}`;
}

/** A channel's last 24 hours of model calls: tokens, what the provider's cache served, cost. */
function formatLastDay(d: NonNullable<ChannelStatus['lastDay']>): string {
  if (d.calls === 0) return 'no model calls';
  const cached =
    d.replyCacheShare === null ? '' : ` (${(d.replyCacheShare * 100).toFixed(1)}% of reply prompts cached)`;
  const cost =
    d.costUsd !== null
      ? `$${d.costUsd.toFixed(4)}`
      : `cost unknown: no [prices] for ${d.unpriced.join(', ')}`;
  return `${plural(d.calls, 'model call', 'model calls')}, ${num(d.promptTokens)} prompt tokens${cached}, ${num(d.completionTokens)} completion; ${cost}${formatReplies(d)}`;
}

/** `; 10 replies, 20.0% after the cache went cold, $0.2100 per 1,000`: what a reply costs, and why. */
function formatReplies(d: NonNullable<ChannelStatus['lastDay']>): string {
  if (d.replies === 0) return '';
  const cold =
    d.coldReplyShare === null ? '' : `, ${(d.coldReplyShare * 100).toFixed(1)}% after the cache went cold`;
  const per1k = d.usdPer1kReplies === null ? '' : `, $${d.usdPer1kReplies.toFixed(4)} per 1,000`;
  return `; ${plural(d.replies, 'reply', 'replies')}${cold}${per1k}`;
}

/** `2 pending (oldest 41 s, deletion)`: until 0, summaries over what they took back are being written again. */
function formatTakeBacks(t: NonNullable<ChannelStatus['takeBacks']>): string {
  if (t.oldest === null) return `${num(t.pending)} pending`;
  const age = Math.max(0, Date.now() - Date.parse(t.oldest.createdAt)) / 1000;
  return `${num(t.pending)} pending (oldest ${duration(age)}, ${TAKE_BACK_KIND_WORDS[t.oldest.kind]})`;
}

function duration(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/** The refusal (a rejected key, no credit) a failed pass reports: it needs an operator, not a retry. */
function refusalOf(pass: PassStatus | undefined): string | undefined {
  return pass?.status === 'failed' && isLlmRefusal(pass.error) ? (pass.error ?? undefined) : undefined;
}

function formatPass(p: PassStatus): string {
  const when = p.createdAt === null ? '' : `${p.createdAt.slice(0, 16).replace('T', ' ')}Z `;
  const outcome = p.status + (p.fallback ? ' (fallback summary)' : '') + (p.error ? ` (${p.error})` : '');
  const details = [
    p.tokensBefore !== null && p.tokensAfter !== null
      ? `${num(p.tokensBefore)} → ${num(p.tokensAfter)} tokens`
      : undefined,
    p.durationMs === null ? undefined : `${(p.durationMs / 1000).toFixed(1)} s`,
    p.costUsd === null ? undefined : `$${p.costUsd.toFixed(4)}`,
  ].filter((d) => d !== undefined);
  return `${when}${p.tier} #${p.fromSeq}–#${p.toSeq} ${outcome}${details.length > 0 ? `: ${details.join(', ')}` : ''}`;
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

function plural(n: number, one: string, many: string): string {
  return `${num(n)} ${n === 1 ? one : many}`;
}
