/**
 * `ebb simulate TRANSCRIPT`: replays a transcript through the real compaction core so an operator
 * can tune thresholds before touching production. Prints a timeline, a usage chart and totals, or
 * with `--json` only JSON Lines (one per message, one per compaction event, a summary last).
 */

import {
  ConfigError,
  type EbbConfig,
  loadConfig,
  type ResolvedChannelConfig,
  resolveChannel,
} from '@ebb/config';
import {
  type CompactionEvent,
  costUsd,
  EbbError,
  type SimulationEvent,
  type SummaryEvent,
  type TranscriptMessage,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { usageChart } from '../dashboard/usage-chart.js';
import type { CommandIo } from './io.js';
import { channelSimulation, perThousand, replayCost } from './simulate-channel.js';
import { readTranscript } from './transcript-file.js';

export interface SimulateArgs {
  readonly transcript: string;
  readonly config?: string;
  readonly channel?: string;
  readonly jobLatency?: number;
  /** Passes take this many seconds of the transcript's clock (instead of `jobLatency` turns). */
  readonly jobSeconds?: number;
  /** Re-time the transcript to this many messages a second (its own timestamps are replaced). */
  readonly rate?: number;
  /** Stop after this many messages. */
  readonly limit?: number;
  readonly json?: boolean;
}

export async function simulate(args: SimulateArgs, io: CommandIo): Promise<number> {
  return replay(retimed(readTranscript(args.transcript), args), args, io);
}

/**
 * The transcript as `--rate` and `--limit` shape it: message i at i / rate seconds after the first
 * message's time (or the epoch when it has none), the first `limit` messages.
 */
export async function* retimed(
  source: AsyncIterable<TranscriptMessage>,
  options: Pick<SimulateArgs, 'rate' | 'limit'>,
): AsyncGenerator<TranscriptMessage> {
  const { rate, limit = Number.POSITIVE_INFINITY } = options;
  let i = 0;
  let start: number | undefined;
  for await (const message of source) {
    if (i >= limit) return;
    if (rate === undefined) {
      yield message;
    } else {
      start ??= message.ts === undefined || Number.isNaN(Date.parse(message.ts)) ? 0 : Date.parse(message.ts);
      yield { ...message, ts: new Date(start + Math.round((i * 1000) / rate)).toISOString() };
    }
    i++;
  }
}

/** Replays any source of messages (a transcript file, or the demo's generator). */
export async function replay(
  source: AsyncIterable<TranscriptMessage> | Iterable<TranscriptMessage>,
  args: Omit<SimulateArgs, 'transcript'>,
  io: CommandIo,
): Promise<number> {
  let config: EbbConfig;
  try {
    config = await loadConfig(args.config === undefined ? {} : { path: args.config });
  } catch (err) {
    // A missing or invalid file is the operator's to fix: the file, key and rule, not a stack.
    if (!(err instanceof ConfigError)) throw err;
    for (const line of err.message.split('\n')) io.err(line);
    return 1;
  }
  return replayChannel(source, resolveChannel(config, args.channel ?? 'defaults'), args, io);
}

/** Replays a source of messages with one channel's resolved settings. */
export async function replayChannel(
  source: AsyncIterable<TranscriptMessage> | Iterable<TranscriptMessage>,
  channel: ResolvedChannelConfig,
  args: Pick<SimulateArgs, 'jobLatency' | 'jobSeconds' | 'json'>,
  io: CommandIo,
): Promise<number> {
  const tokenizer = await loadTokenizer(channel.llm.encoding);
  const out = args.json ? jsonPrinter(io) : textPrinter(io, channel);
  const sim = channelSimulation(channel, tokenizer, {
    ...(args.jobLatency === undefined ? {} : { jobLatency: args.jobLatency }),
    ...(args.jobSeconds === undefined ? {} : { jobSeconds: args.jobSeconds }),
    emit: out.event,
  });
  try {
    for await (const message of source) sim.turn(message);
  } catch (err) {
    // The JSON events replayed before the error are what happened; a text report of part of a
    // replay would read as the whole one, so there is none.
    if (args.json) out.flush();
    if (err instanceof EbbError || isNodeError(err)) {
      io.err(`ebb simulate: ${(err as Error).message}`);
      return 1;
    }
    throw err;
  }
  sim.finish();
  out.flush();
  return 0;
}

interface Printer {
  event(e: SimulationEvent): void;
  flush(): void;
}

/** JSON Lines, buffered: a 100,000-message replay prints well over 100,000 lines. */
function jsonPrinter(io: CommandIo): Printer {
  let buffer: string[] = [];
  const flush = () => {
    if (buffer.length > 0) io.out(buffer.join('\n'));
    buffer = [];
  };
  return {
    event(e) {
      buffer.push(JSON.stringify(e));
      if (buffer.length >= 4096) flush();
    },
    flush,
  };
}

function textPrinter(io: CommandIo, channel: ResolvedChannelConfig): Printer {
  const usage: number[] = [];
  const timeline: string[] = [];
  let summary: SummaryEvent | undefined;
  return {
    event(e) {
      switch (e.type) {
        case 'message':
          usage.push(e.usage);
          return;
        case 'compaction':
          timeline.push(timelineLine(e));
          return;
        case 'summary':
          summary = e;
          return;
      }
    },
    flush() {
      const { compaction: c } = channel;
      io.out(
        `Channel ${channel.channelKey}: window ${channel.llm.contextWindow}, reply reserve ${channel.llm.maxOutputTokens}, encoding ${channel.llm.encoding}`,
      );
      io.out(
        `Thresholds: ${c.microcompaction ? `microcompact ${usageOf(Math.min(c.microcompactThreshold, c.backgroundThreshold))}, ` : ''}background ${usageOf(c.backgroundThreshold)}${c.workingTokens === undefined ? '' : ` (working_tokens ${c.workingTokens})`} freeing ${c.backgroundFraction}, aggressive ${c.aggressiveThreshold}, emergency ${c.emergencyThreshold}\n`,
      );
      io.out('Timeline');
      io.out(timeline.length > 0 ? timeline.join('\n') : '  (no compaction events)');
      io.out('\nUsage');
      io.out(
        usageChart(usage, {
          background: c.backgroundThreshold,
          aggressive: c.aggressiveThreshold,
          emergency: c.emergencyThreshold,
        }),
      );
      if (summary) io.out(`\n${totals(summary, channel)}`);
    },
  };
}

function timelineLine(e: CompactionEvent): string {
  const range = e.fromSeq === null ? '' : ` #${e.fromSeq}–#${e.toSeq}`;
  const tokens = e.tokensBefore === null ? '' : ` tokens ${e.tokensBefore} → ${e.tokensAfter}`;
  const reason = e.reason ? ` (${e.reason})` : '';
  return `  @${String(e.seq).padStart(7)}  ${e.event.padEnd(9)} ${e.tier.padEnd(10)} usage ${e.usage.toFixed(3)}${range}${tokens}${reason}`;
}

function totals(s: SummaryEvent, channel: ResolvedChannelConfig): string {
  const lines = [
    'Totals',
    `  messages ${s.messages}, archived ${s.archived}, context now ${s.contextTokens} tokens, peak usage ${s.peakUsage.toFixed(3)} (${s.peakUsageBeforeMonitor.toFixed(3)} before the monitor acted)`,
    `  passes: background ${s.tiers.background}, aggressive ${s.tiers.aggressive}, emergency truncations ${s.tiers.emergency}, heals ${s.heals}`,
    `  follow-ups ${s.followUps}, escalations ${s.escalations}, delayed by the cooldown ${s.delayed}, started on a cold cache ${s.coldPasses}, stale results ${s.stale}, turns with passes that freed little ${s.ineffective}`,
    `  microcompaction: ${s.stubbedResults} tool results stubbed on ${s.microcompactions} turns`,
    `  summarizer tokens: ${s.summarizerInputTokens} in, ${s.summarizerOutputTokens} out`,
  ];
  if (channel.price) {
    const cost = costUsd({ input: s.summarizerInputTokens, output: s.summarizerOutputTokens }, channel.price);
    lines.push(`  summarizer cost at ${channel.compaction.summarizerModel} prices: $${cost.toFixed(4)}`);
  }
  lines.push(...promptCacheLines(s, channel));
  return lines.join('\n');
}

/**
 * The reply prompts (one answer per participant's message; recalled memories and the answers' own
 * output left out) as a prefix cache serves them, one that forgets a prefix unused for the channel's
 * `cache_ttl_seconds` on the transcript's clock; what each compaction event and the expiry cost the
 * cache, and the input cost per 1,000 messages and per 1,000 replies at `[prices]`.
 */
function promptCacheLines(s: SummaryEvent, channel: ResolvedChannelConfig): string[] {
  const c = s.promptCache;
  if (c.prompts === 0) return [];
  const share = (n: number) => `${((100 * n) / Math.max(1, c.promptTokens)).toFixed(1)}%`;
  const ttl = channel.llm.cacheTtlSeconds;
  const cold = `${((100 * c.coldPrompts) / c.prompts).toFixed(1)}%`;
  const lines = [
    `  reply prompts: ${c.prompts} (one per participant's message), ${c.promptTokens} tokens, ${share(c.cachedTokens)} servable from a prefix cache that keeps a prompt ${ttl} s after its last use (cache_ttl_seconds); ${c.coldPrompts} (${cold}) came after a longer silence and are paid in full`,
    `  cache misses by cause: expiry ${c.missedBy.expiry} tokens (${share(c.missedBy.expiry)}), splices ${c.missedBy.splice} (${share(c.missedBy.splice)}), emergency truncations ${c.missedBy.truncation} (${share(c.missedBy.truncation)}), microcompaction ${c.missedBy.microcompaction} (${share(c.missedBy.microcompaction)})`,
  ];
  const cost = replayCost(s, channel);
  if (cost) {
    const usd = (n: number) => `$${perThousand(n, s).toFixed(4)}`;
    const perReply = `$${((1000 * cost.replies) / c.prompts).toFixed(4)}`;
    lines.push(
      `  estimated input cost per 1,000 messages: ${usd(cost.total)} (reply prompts ${usd(cost.replies)} at ${channel.llm.model} prices, summarizer ${usd(cost.passes)}; replies' output not included); per 1,000 replies: ${perReply} of input`,
    );
  } else {
    lines.push(
      `  estimated cost: add [prices."${channel.llm.price ? channel.compaction.summarizerModel : channel.llm.model}"] to config.toml`,
    );
  }
  return lines;
}

function isNodeError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
}

/** A threshold as the file would write it: a working size's share of the window to three places. */
function usageOf(threshold: number): number {
  return Math.round(threshold * 1000) / 1000;
}
