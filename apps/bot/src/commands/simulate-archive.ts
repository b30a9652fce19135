/**
 * `ebb simulate --from-archive KEY [--since DURATION] [--suggest] [--json]`: replays a channel's own
 * archived traffic from the deployment's database (real timestamps and sizes, the bot's replies, tool
 * calls and results) through the same decision the bot makes, with the channel's resolved settings.
 * Passes take what the channel's recorded passes took (`compaction_runs`: the 90th percentile, so the
 * replay survives the slow tail; the median is printed beside it), or `--job-seconds`. The archive is
 * read in keyset pages and summarized messages are dropped, so memory stays bounded.
 *
 * `--suggest` searches the channel's settings (`simulate-suggest.ts`) and prints current against
 * suggested and a block to paste. `KEY` may be a glob (`"slack:T1:*"`): one replay or suggestion per
 * channel.
 */
import { readFile } from 'node:fs/promises';
import {
  ConfigError,
  type ConfigIssue,
  channelCompactionBlock,
  checkChannel,
  type EbbConfig,
  patternMatches,
  type ResolvedChannelConfig,
  resolveChannel,
  withChannelCompaction,
} from '@ebb/config';
import type { Tokenizer, TranscriptMessage } from '@ebb/core';
import { type PassDurations, PgArchiveReader } from '@ebb/db';
import { loadTokenizer } from '@ebb/llm';
import type { DashboardPassSeconds } from '@ebb/web';
import { channelPromptMeasure } from '../status/prompt-measure.js';
import type { CommandIo } from './io.js';
import { replayChannel } from './simulate.js';
import {
  changedValues,
  passCount,
  type ReplayOutcome,
  type SearchedValues,
  type Suggestion,
  suggestSettings,
} from './simulate-suggest.js';
import { readConfig, type StoreCommandDeps, withStores } from './store-session.js';

export interface SimulateArchiveArgs {
  /** A channel key, or a glob over keys. */
  readonly fromArchive: string;
  /** Only messages (and passes) of the last this many milliseconds. */
  readonly sinceMs?: number;
  readonly config?: string;
  readonly jobSeconds?: number;
  readonly suggest?: boolean;
  readonly json?: boolean;
  readonly embedded?: boolean;
}

/** What passes take before a channel has recorded any: the monitor's own assumption (10 s). */
export const UNRECORDED_PASS_SECONDS = 10;
/** A replay that compacts fewer times than this cannot tell settings apart. */
const MIN_PASSES_OF_HISTORY = 2;

export async function simulateArchive(
  args: SimulateArchiveArgs,
  io: CommandIo,
  deps: StoreCommandDeps = {},
): Promise<number> {
  const command = 'ebb simulate';
  const config = await readConfig(command, args.config, io, deps);
  if (typeof config === 'number') return config;
  const text = await configText(config);
  return withStores(
    {
      command,
      embeddedHint: 'Replay a transcript file instead (`ebb simulate FILE`).',
      embedded: args.embedded,
    },
    io,
    deps,
    async ({ database }) => {
      const reader = new PgArchiveReader({ db: database.db });
      const keys = args.fromArchive.includes('*')
        ? (await reader.channelKeys()).filter((key) => patternMatches(args.fromArchive, key))
        : [args.fromArchive];
      if (keys.length === 0) {
        io.err(`${command}: no channel matches ${args.fromArchive}`);
        return 1;
      }
      const since = args.sinceMs === undefined ? undefined : new Date(Date.now() - args.sinceMs);
      const reports: ChannelReport[] = [];
      for (const key of keys) {
        reports.push(await simulateChannel({ key, config, text, reader, since, args, io }));
      }
      // Without --suggest, --json prints the replays' JSON Lines (`ebb simulate --json`) alone.
      if (args.json && args.suggest) io.out(JSON.stringify(keys.length === 1 ? reports[0] : reports));
      return reports.some((r) => r.status === 'error') ? 1 : 0;
    },
  );
}

export type ChannelReport =
  | { readonly channel: string; readonly status: 'error'; readonly error: string }
  | {
      readonly channel: string;
      readonly status: 'too_little_history';
      readonly messages: number;
      readonly neededMessages: number;
      /** Passes the replay with the channel's settings made. */
      readonly passes: number;
    }
  | ({ readonly channel: string; readonly status: 'replayed' | 'suggested'; readonly messages: number } & {
      readonly passSeconds: PassSeconds;
      readonly suggestion?: SuggestionReport;
    });

/** Seconds a replayed pass takes, and where that came from (the dashboard's API carries the same). */
export type PassSeconds = DashboardPassSeconds;

export interface SuggestionReport extends Omit<Suggestion, 'suggested' | 'closest'> {
  readonly suggested: { readonly values: Partial<SearchedValues>; readonly outcome: ReplayOutcome } | null;
  readonly closest: { readonly values: Partial<SearchedValues>; readonly outcome: ReplayOutcome } | null;
  /** The block to paste into config.toml, or null. */
  readonly block: string | null;
}

interface ChannelRun {
  readonly key: string;
  readonly config: EbbConfig;
  readonly text: string;
  readonly reader: PgArchiveReader;
  readonly since: Date | undefined;
  readonly args: SimulateArchiveArgs;
  readonly io: CommandIo;
}

async function simulateChannel(run: ChannelRun): Promise<ChannelReport> {
  const { key, config, reader, since, args, io } = run;
  const channel = resolveChannel(config, key);
  const period = since === undefined ? {} : { since };
  const messages = await reader.count(key, period);
  if (messages === 0) {
    const error = `no archived messages${since === undefined ? '' : ' in that time'}`;
    if (!args.json) io.err(`${key}: ${error}`);
    return { channel: key, status: 'error', error };
  }
  const passSeconds = passSecondsOf(await reader.passDurations(key, period), args.jobSeconds);
  const source = () => transcriptOf(reader.messages(key, period));
  if (!args.json) io.out(headline(key, messages, passSeconds));

  if (!args.suggest) {
    const code = await replayChannel(
      source(),
      channel,
      { jobSeconds: passSeconds.replayed, json: args.json ?? false },
      io,
    );
    return code === 0
      ? { channel: key, status: 'replayed', messages, passSeconds }
      : { channel: key, status: 'error', error: 'replay failed' };
  }

  const report = await suggestChannel({ key, channel, text: run.text, messages, passSeconds, source });
  if (!args.json) {
    if (report.status === 'too_little_history') {
      io.out(
        `  too little history to tune from: the replay compacted ${report.passes} time(s); it needs at least ${MIN_PASSES_OF_HISTORY} passes' worth of traffic, about ${report.neededMessages.toLocaleString('en')} messages at this channel's pace (${messages.toLocaleString('en')} archived)`,
      );
      io.out('');
    } else if (report.status === 'suggested' && report.suggestion)
      printSuggestion(io, key, channel, report.suggestion, passSeconds);
  }
  return report;
}

export interface SuggestChannelInput {
  readonly key: string;
  readonly channel: ResolvedChannelConfig;
  /** The config file's text (`''` for built-in defaults): candidates are checked against it. */
  readonly text: string;
  readonly messages: number;
  readonly passSeconds: PassSeconds;
  readonly source: () => AsyncIterable<TranscriptMessage>;
}

/** The text of the file `config` was read from (`''` for built-in defaults): what candidates are checked against. */
export function configText(config: EbbConfig): Promise<string> {
  return config.file === null ? Promise.resolve('') : readFile(config.file, 'utf8');
}

/** `--suggest` for one channel, as data: what the CLI prints and the dashboard's API returns. */
export async function suggestChannel(input: SuggestChannelInput): Promise<ChannelReport> {
  const { key, channel, messages, passSeconds } = input;
  const tokenizer = await loadTokenizer(channel.llm.encoding);
  const suggestion = await suggestSettings({
    channel,
    tokenizer,
    source: input.source,
    jobSeconds: passSeconds.replayed,
    accepts: acceptsCandidate(input, channel, tokenizer),
  });
  if (suggestion.current.emergencies === 0 && passCount(suggestion.current) < MIN_PASSES_OF_HISTORY) {
    const neededMessages = historyNeeded(suggestion.current, channel, messages);
    return {
      channel: key,
      status: 'too_little_history',
      messages,
      neededMessages,
      passes: passCount(suggestion.current),
    };
  }
  return {
    channel: key,
    status: 'suggested',
    messages,
    passSeconds,
    suggestion: suggestionReport(suggestion, key, input.text),
  };
}

/** Whether `ebb config check --channel KEY` accepts the file with the channel's block set to `values`. */
function acceptsCandidate(
  run: Pick<ChannelRun, 'text' | 'key'>,
  channel: ResolvedChannelConfig,
  tokenizer: Tokenizer,
): (values: SearchedValues) => boolean {
  const measure = channelPromptMeasure(channel, tokenizer);
  return (values) => candidateProblems(run, values, measure).length === 0;
}

/** What `ebb config check --channel KEY` says of the file with the channel's block set to `values`. */
export function candidateProblems(
  run: Pick<ChannelRun, 'text' | 'key'>,
  values: Partial<SearchedValues>,
  measure?: Parameters<typeof checkChannel>[3],
): readonly ConfigIssue[] {
  try {
    const config = withChannelCompaction(run.text, 'config.toml', run.key, values);
    return checkChannel(config, run.key, 'config.toml', measure);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues;
    throw err;
  }
}

/** The messages a replay needs to compact `MIN_PASSES_OF_HISTORY` times, from how far this one got. */
function historyNeeded(outcome: ReplayOutcome, channel: ResolvedChannelConfig, messages: number): number {
  const perPass = Math.max(0.01, channel.compaction.backgroundThreshold);
  const reached = Math.max(0.01, outcome.peakUsage);
  return Math.ceil((messages * MIN_PASSES_OF_HISTORY * perPass) / reached);
}

export function passSecondsOf(durations: PassDurations, option: number | undefined): PassSeconds {
  const median = durations.medianMs === null ? null : durations.medianMs / 1000;
  const p90 = durations.slowMs === null ? null : durations.slowMs / 1000;
  const base = { runs: durations.runs, median, p90 };
  if (option !== undefined) return { ...base, replayed: option, source: 'option' };
  if (p90 !== null) return { ...base, replayed: round1(p90), source: 'recorded' };
  return { ...base, replayed: UNRECORDED_PASS_SECONDS, source: 'default' };
}

function headline(key: string, messages: number, p: PassSeconds): string {
  const recorded =
    p.runs === 0
      ? 'no recorded passes'
      : `its ${p.runs} recorded passes took ${round1(p.median ?? 0)} s (median), ${round1(p.p90 ?? 0)} s (90th percentile)`;
  const replayed = {
    recorded: `passes replayed at the 90th percentile, ${p.replayed} s`,
    option: `passes replayed at --job-seconds, ${p.replayed} s`,
    default: `passes replayed at ${p.replayed} s, the monitor's assumption before one has landed`,
  }[p.source];
  return `${key}: ${messages.toLocaleString('en')} archived messages; ${recorded}; ${replayed}`;
}

async function* transcriptOf(messages: AsyncIterable<{ readonly seq: number } & TranscriptMessage>) {
  for await (const { seq: _seq, ...message } of messages) yield message as TranscriptMessage;
}

function suggestionReport(s: Suggestion, key: string, text: string): SuggestionReport {
  const changed = (values: SearchedValues) => changedValues(values, s.currentValues);
  const suggested = s.suggested && { values: changed(s.suggested.values), outcome: s.suggested.outcome };
  return {
    ...s,
    suggested,
    closest: s.closest && { values: changed(s.closest.values), outcome: s.closest.outcome },
    block:
      suggested && Object.keys(suggested.values).length > 0
        ? channelCompactionBlock(text, key, suggested.values)
        : null,
  };
}

function printSuggestion(
  io: CommandIo,
  key: string,
  channel: ResolvedChannelConfig,
  s: SuggestionReport,
  passSeconds: PassSeconds,
): void {
  const target = s.suggested ?? s.closest;
  const columns = target === null ? [s.current] : [s.current, target.outcome];
  const heading = ['', 'current', s.suggested ? 'suggested' : 'closest'].slice(0, columns.length + 1);
  const rows: string[][] = [
    heading,
    ['emergencies', ...columns.map((o) => String(o.emergencies))],
    [
      'passes (background / aggressive / heals)',
      ...columns.map((o) => `${o.passes.background} / ${o.passes.aggressive} / ${o.passes.heals}`),
    ],
    ['peak usage', ...columns.map((o) => o.peakUsage.toFixed(3))],
    ['cacheable share of reply prompts', ...columns.map((o) => `${(100 * o.cacheableShare).toFixed(1)}%`)],
    [
      'cost per 1,000 messages',
      ...columns.map((o) =>
        o.costPerThousand === null
          ? `${Math.round(o.tokensPerThousand).toLocaleString('en')} tokens`
          : `$${o.costPerThousand.toFixed(4)}`,
      ),
    ],
  ];
  io.out('');
  for (const line of alignTable(rows)) io.out(`  ${line}`);
  io.out('');
  const { search } = s;
  io.out(
    `  searched ${search.candidates} settings (${search.refused} refused by config check) in ${search.reads} reads of the archive, ${search.replays} replays, ${(search.ms / 1000).toFixed(1)} s`,
  );
  if (s.current.costPerThousand === null)
    io.out(
      `  no price for ${channel.llm.price ? channel.compaction.summarizerModel : channel.llm.model}: ranked by uncached reply prompt and summarizer tokens; add [prices] to rank by cost`,
    );
  if (s.suggested) {
    if (s.block === null) {
      io.out(`  ${key}'s own settings are the best found: nothing to change.`);
    } else {
      io.out(
        `  paste into config.toml in place of any [channels.${JSON.stringify(key)}.compaction] block (its other keys are in it):`,
      );
      io.out('');
      io.out(s.block);
    }
  } else {
    io.out(
      `  no setting reaches 0 emergencies at this channel's burst rate with passes of ${passSeconds.replayed} s; the closest has ${s.closest?.outcome.emergencies ?? s.current.emergencies}.`,
    );
    for (const w of s.whatWould)
      io.out(
        `  with ${w.change}: ${w.outcome.emergencies} emergencies${w.outcome.emergencies === 0 ? ' (this would)' : ''}`,
      );
  }
  io.out('');
}

function alignTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('   '),
  );
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}
