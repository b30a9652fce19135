/**
 * `ebb simulate --suggest`: searches a channel's compaction settings for the one that replays its
 * traffic with 0 emergencies at the lowest estimated cost (reply prompts a prefix cache cannot serve
 * plus the summarizer's tokens, at `[prices]`), ties broken by fewer passes.
 *
 * The search is two rounds over the archive, each one read of it with every candidate replayed side
 * by side (one `Simulation` each, fed the same message, token counts shared through a small memo):
 * a coarse grid of thresholds and fractions (the channel's own settings among them), then a refinement
 * around the best of the protected margin, `protect_recent` and the cooldown. Every candidate is first
 * put through the config package's own validation (`withChannelCompaction` + `checkChannel`, what
 * `ebb config check` runs), so nothing the check refuses is replayed or proposed. When no candidate
 * reaches 0 emergencies, the best one is replayed with twice the window and with passes twice as
 * fast, side by side on one more read, to say which would.
 */
import type { ResolvedChannelConfig } from '@ebb/config';
import {
  type CompactionPolicy,
  LruMap,
  type SummaryEvent,
  type Tokenizer,
  type TranscriptMessage,
} from '@ebb/core';
import type { DashboardReplayOutcome, DashboardSearchCost } from '@ebb/web';
import { channelSimulation, perThousand, replayCost } from './simulate-channel.js';

/** The keys the search moves, as `config.toml` writes them under `[channels."KEY".compaction]`. */
export const SEARCHED_KEYS = [
  'background_threshold',
  'aggressive_threshold',
  'emergency_threshold',
  'background_fraction',
  'aggressive_fraction',
  'protect_recent',
  'cooldown_seconds',
] as const;
export type SearchedKey = (typeof SEARCHED_KEYS)[number];
export type SearchedValues = Readonly<Record<SearchedKey, number>>;

/** What one replay came to (the dashboard's API carries the same). */
export type ReplayOutcome = DashboardReplayOutcome;

export interface Suggestion {
  readonly current: ReplayOutcome;
  readonly currentValues: SearchedValues;
  /** The best setting with 0 emergencies, or null when none reached it. */
  readonly suggested: { readonly values: SearchedValues; readonly outcome: ReplayOutcome } | null;
  /** When none reached 0 emergencies: the fewest, and what the window or faster passes would do to it. */
  readonly closest: { readonly values: SearchedValues; readonly outcome: ReplayOutcome } | null;
  readonly whatWould: readonly { readonly change: string; readonly outcome: ReplayOutcome }[];
  readonly search: DashboardSearchCost;
}

export interface SuggestOptions {
  readonly channel: ResolvedChannelConfig;
  readonly tokenizer: Tokenizer;
  /** A fresh read of the channel's traffic, oldest first (called once per round). */
  readonly source: () => AsyncIterable<TranscriptMessage>;
  readonly jobSeconds: number;
  /** Whether `ebb config check` accepts these values in the channel's block. */
  readonly accepts: (values: SearchedValues) => boolean;
  readonly now?: () => number;
}

export async function suggestSettings(options: SuggestOptions): Promise<Suggestion> {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const { channel } = options;
  const currentValues = valuesOf(channel.compaction);
  let refused = 0;
  let candidates = 0;
  const seen = new Set<string>([JSON.stringify(currentValues)]);
  const admit = (list: SearchedValues[]) =>
    list.filter((values) => {
      const key = JSON.stringify(values);
      if (seen.has(key)) return false;
      seen.add(key);
      candidates++;
      if (options.accepts(values)) return true;
      refused++;
      return false;
    });

  const coarse = admit(coarseGrid(currentValues));
  const [current, ...coarseOutcomes] = await replayAll(options, [currentValues, ...coarse].map(asIs));
  if (current === undefined) throw new Error('no replay');
  let ranked = rank(coarse.map((values, i) => ({ values, outcome: coarseOutcomes[i] as ReplayOutcome })));
  let reads = 1;
  let replays = coarse.length + 1;

  const best = ranked[0];
  if (best !== undefined) {
    const refine = admit(refinements(best.values));
    if (refine.length > 0) {
      const outcomes = await replayAll(options, refine.map(asIs));
      reads++;
      replays += refine.length;
      ranked = rank([
        ...ranked,
        ...refine.map((values, i) => ({ values, outcome: outcomes[i] as ReplayOutcome })),
      ]);
    }
  }
  // The channel's own settings compete too: a suggestion must beat them.
  ranked = rank([...ranked, { values: currentValues, outcome: current }]);
  const top = ranked[0];
  const suggested = top !== undefined && top.outcome.emergencies === 0 ? top : null;

  const whatWould: { change: string; outcome: ReplayOutcome }[] = [];
  let closest: Suggestion['closest'] = null;
  if (suggested === null && top !== undefined) {
    closest = top;
    const [wider, faster] = await replayAll(options, [
      { values: top.values, contextWindow: channel.llm.contextWindow * 2 },
      { values: top.values, jobSeconds: options.jobSeconds / 2 },
    ]);
    reads++;
    replays += 2;
    if (wider)
      whatWould.push({ change: `context_window = ${channel.llm.contextWindow * 2}`, outcome: wider });
    if (faster)
      whatWould.push({
        change: `passes twice as fast (${(options.jobSeconds / 2).toFixed(1)} s: a faster summarizer_model)`,
        outcome: faster,
      });
  }
  return {
    current,
    currentValues,
    suggested,
    closest,
    whatWould,
    search: { candidates, refused, reads, replays, ms: Math.round(now() - started) },
  };
}

/** The searched keys of a policy, as the file writes them. */
export function valuesOf(policy: CompactionPolicy): SearchedValues {
  return {
    background_threshold: policy.backgroundThreshold,
    aggressive_threshold: policy.aggressiveThreshold,
    emergency_threshold: policy.emergencyThreshold,
    background_fraction: policy.backgroundFraction,
    aggressive_fraction: policy.aggressiveFraction,
    protect_recent: policy.protectRecent,
    cooldown_seconds: policy.cooldownMs / 1000,
  };
}

export function policyOf(base: CompactionPolicy, v: SearchedValues): CompactionPolicy {
  return {
    ...base,
    backgroundThreshold: v.background_threshold,
    aggressiveThreshold: v.aggressive_threshold,
    emergencyThreshold: v.emergency_threshold,
    backgroundFraction: v.background_fraction,
    aggressiveFraction: v.aggressive_fraction,
    protectRecent: v.protect_recent,
    cooldownMs: v.cooldown_seconds * 1000,
  };
}

/** The values that differ from `current`, in `SEARCHED_KEYS` order. */
export function changedValues(values: SearchedValues, current: SearchedValues): Partial<SearchedValues> {
  const out: Partial<Record<SearchedKey, number>> = {};
  for (const key of SEARCHED_KEYS) if (values[key] !== current[key]) out[key] = values[key];
  return out;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * Background thresholds 0.4 to 0.7 and the channel's own, each with an aggressive threshold 0.05 or
 * 0.10 above it; the channel's emergency threshold and 0.98; the channel's fractions and larger ones
 * (0.5 / 0.7). 40 candidates at most.
 */
function coarseGrid(current: SearchedValues): SearchedValues[] {
  const backgrounds = unique([0.4, 0.5, 0.6, 0.7, current.background_threshold]);
  const emergencies = unique([current.emergency_threshold, 0.98]);
  const fractions = unique(
    [
      [current.background_fraction, current.aggressive_fraction],
      [0.5, 0.7],
    ].map((pair) => JSON.stringify(pair)),
  ).map((pair) => JSON.parse(pair) as [number, number]);
  const out: SearchedValues[] = [];
  for (const emergency of emergencies)
    for (const background of backgrounds)
      for (const gap of [0.05, 0.1])
        for (const [bf, af] of fractions) {
          const aggressive = round2(background + gap);
          if (aggressive >= emergency) continue;
          out.push({
            ...current,
            background_threshold: background,
            aggressive_threshold: aggressive,
            emergency_threshold: emergency,
            background_fraction: bf,
            aggressive_fraction: Math.max(af, bf),
          });
        }
  return out;
}

/** Around the best of the grid: the background threshold 0.05 either side, half the protected messages, no cooldown. */
function refinements(best: SearchedValues): SearchedValues[] {
  const out: SearchedValues[] = [];
  for (const shift of [-0.05, 0, 0.05])
    for (const protect of unique([best.protect_recent, Math.floor(best.protect_recent / 2)]))
      for (const cooldown of unique([best.cooldown_seconds, 0])) {
        const background = round2(best.background_threshold + shift);
        const aggressive = round2(best.aggressive_threshold + shift);
        if (background <= 0 || aggressive >= best.emergency_threshold) continue;
        out.push({
          ...best,
          background_threshold: background,
          aggressive_threshold: aggressive,
          protect_recent: protect,
          cooldown_seconds: cooldown,
        });
      }
  return out;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** 0 emergencies first, then the lowest cost (tokens without prices), then the fewest passes, then fewest emergencies. */
function rank<T extends { readonly outcome: ReplayOutcome }>(list: readonly T[]): T[] {
  const cost = (o: ReplayOutcome) => o.costPerThousand ?? o.tokensPerThousand;
  return [...list].sort(
    (a, b) =>
      Number(a.outcome.emergencies > 0) - Number(b.outcome.emergencies > 0) ||
      (a.outcome.emergencies > 0 ? a.outcome.emergencies - b.outcome.emergencies : 0) ||
      cost(a.outcome) - cost(b.outcome) ||
      passCount(a.outcome) - passCount(b.outcome),
  );
}

/** Passes a replay made, every tier but emergency truncations. */
export function passCount({ passes }: ReplayOutcome): number {
  return passes.background + passes.aggressive + passes.heals;
}

/** A candidate to replay, with the channel's window and the passes' seconds unless it says otherwise. */
interface Replay {
  readonly values: SearchedValues;
  readonly contextWindow?: number;
  readonly jobSeconds?: number;
}

const asIs = (values: SearchedValues): Replay => ({ values });

/** Replays every candidate side by side on one read of the traffic. */
async function replayAll(options: SuggestOptions, replays: readonly Replay[]): Promise<ReplayOutcome[]> {
  const { channel } = options;
  const tokenizer = memoTokenizer(options.tokenizer);
  const sims = replays.map((r) =>
    channelSimulation(channel, tokenizer, {
      policy: policyOf(channel.compaction, r.values),
      ...(r.contextWindow === undefined ? {} : { contextWindow: r.contextWindow }),
      jobSeconds: r.jobSeconds ?? options.jobSeconds,
      emit: () => {},
    }),
  );
  for await (const message of options.source()) for (const sim of sims) sim.turn(message);
  return sims.map((sim) => outcomeOf(sim.finish(), channel));
}

export function outcomeOf(s: SummaryEvent, channel: ResolvedChannelConfig): ReplayOutcome {
  const c = s.promptCache;
  const cost = replayCost(s, channel);
  return {
    messages: s.messages,
    emergencies: s.tiers.emergency,
    passes: { background: s.tiers.background, aggressive: s.tiers.aggressive, heals: s.heals },
    peakUsage: s.peakUsage,
    cacheableShare: c.promptTokens === 0 ? 0 : c.cachedTokens / c.promptTokens,
    costPerThousand: cost === null ? null : perThousand(cost.total, s),
    tokensPerThousand: perThousand(
      c.promptTokens - c.cachedTokens + s.summarizerInputTokens + s.summarizerOutputTokens,
      s,
    ),
  };
}

/**
 * The tokenizer with the counts of recent texts remembered: candidates replayed side by side count
 * the same message one after another. Bounded: the 8,192 texts counted last.
 */
function memoTokenizer(tokenizer: Tokenizer): Tokenizer {
  const counts = new LruMap<string, number>(8_192);
  return {
    encoding: tokenizer.encoding,
    count: (text) => counts.getOrSet(text, () => tokenizer.count(text)),
    encode: (text) => tokenizer.encode(text),
    decode: (tokens) => tokenizer.decode(tokens),
  };
}
