/**
 * What the "Suggested settings" panel says, as text (pure, no DOM: `suggestion.ts` draws it): the
 * route's answer (`DashboardSuggestion`, what `ebb simulate --from-archive KEY --suggest --json`
 * computes) turned into one leading sentence, the table of current against suggested (or closest),
 * the block to paste, what would reach 0 emergencies when nothing does, and notes on how it was
 * computed. The table's rows are the CLI's, in the CLI's order.
 */
import {
  DASHBOARD_LIMITS,
  type DashboardPassSeconds,
  type DashboardReplayOutcome,
  type DashboardSuggestion,
} from '../dashboard-api.js';
import { clock, num, pct, plural } from './format.js';

/** `good`: 0 emergencies; `bad`: some. */
export type Tone = 'good' | 'bad';

export interface SuggestionCell {
  readonly text: string;
  readonly tone?: Tone;
}

export interface SuggestionRow {
  /** `emergencies`, `passes`, `peak`, `cacheable`, `cost` (or `tokens` when a model has no price). */
  readonly key: string;
  readonly label: string;
  /** What the row counts, for the label's title. */
  readonly title: string;
  readonly cells: readonly SuggestionCell[];
}

export interface SuggestionView {
  /** What the search found, in one sentence. */
  readonly lead: string;
  readonly tone?: Tone;
  /** Column headings after the rows' names: `current`, then `suggested` or `closest` when there is one. */
  readonly columns: readonly string[];
  /** Empty when there is nothing to compare (too little history, nothing archived). */
  readonly rows: readonly SuggestionRow[];
  /** `[channels."KEY".compaction]` ready to paste; null when nothing is to change. */
  readonly block: string | null;
  /** When no setting reaches 0 emergencies: what the closest changes, and what would. */
  readonly would: readonly string[];
  /** How it was computed: messages replayed, pass seconds, when, what the search cost. */
  readonly notes: readonly string[];
}

const emergencies = (n: number) => `${num(n)} emergenc${n === 1 ? 'y' : 'ies'}`;

/** What the panel says while the route computes (a first request replays the archive: seconds). */
export const COMPUTING = `Replaying this channel's last ${num(DASHBOARD_LIMITS.suggestionMessages)} messages at most, with every candidate setting: a first request takes some seconds…`;

/** A channel with no message archived (or none the bot knows). */
export const NOTHING_ARCHIVED = "Nothing archived yet: a suggestion replays the channel's archived messages.";

export function suggestionView(s: DashboardSuggestion): SuggestionView {
  const at = Date.parse(s.computedAt);
  const computed = `Computed at ${clock(at)}, from the messages archived then; the same answer is served until ${clock(at + DASHBOARD_LIMITS.suggestionTtlMs)}.`;
  const none = { columns: [], rows: [], block: null, would: [] } as const;
  switch (s.status) {
    case 'no_history':
      return {
        ...none,
        lead: NOTHING_ARCHIVED,
        notes: [`Computed at ${clock(at)}; asked again once the channel has a message archived.`],
      };
    case 'too_little_history':
      return {
        ...none,
        lead: `Too little history to tune from: ${plural(s.messages, 'message')} archived; a suggestion needs about ${num(s.neededMessages)} at this channel's pace (enough traffic for its replay to compact more than once).`,
        notes: [
          `Computed at ${clock(at)}; asked again once the channel has ${plural(s.neededMessages, 'message')} archived.`,
        ],
      };
    case 'suggested':
      return suggested(s, computed);
  }
}

type Suggested = Extract<DashboardSuggestion, { status: 'suggested' }>;

function suggested(s: Suggested, computed: string): SuggestionView {
  const target = s.suggested ?? s.closest;
  const outcomes = target === null ? [s.current] : [s.current, target.outcome];
  const columns = ['current', ...(target === null ? [] : [s.suggested ? 'suggested' : 'closest'])];
  const priced = outcomes.every((o) => o.costPerThousand !== null);
  const rows: SuggestionRow[] = [
    {
      key: 'emergencies',
      label: 'emergencies',
      title: 'emergency truncations in the replay',
      cells: outcomes.map((o) => ({ text: num(o.emergencies), tone: o.emergencies === 0 ? 'good' : 'bad' })),
    },
    {
      key: 'passes',
      label: 'passes (background / aggressive / heals)',
      title: 'compaction passes in the replay, by tier; a heal summarizes what a truncation set aside',
      cells: outcomes.map(({ passes: p }) => ({
        text: `${num(p.background)} / ${num(p.aggressive)} / ${num(p.heals)}`,
      })),
    },
    {
      key: 'peak',
      label: 'peak usage',
      title: 'the highest share of the prompt budget the context reached',
      cells: outcomes.map((o) => ({ text: pct(o.peakUsage) })),
    },
    {
      key: 'cacheable',
      label: 'cacheable share of reply prompts',
      title: "the reply prompts' tokens a provider's prefix cache can serve",
      cells: outcomes.map((o) => ({ text: pct(o.cacheableShare) })),
    },
    priced
      ? {
          key: 'cost',
          label: 'cost per 1,000 messages',
          title: 'USD at [prices]: reply prompts (cached tokens at the cached price) and the summarizer',
          cells: outcomes.map((o) => ({ text: cost(o) })),
        }
      : {
          key: 'tokens',
          label: 'tokens per 1,000 messages',
          title:
            "reply prompt tokens a prefix cache cannot serve, and the summarizer's (a model has no [prices])",
          cells: outcomes.map((o) => ({ text: num(Math.round(o.tokensPerThousand)) })),
        },
  ];
  return {
    lead: lead(s, priced),
    tone: s.suggested ? 'good' : 'bad',
    columns,
    rows,
    block: s.block,
    would: s.suggested ? [] : would(s),
    notes: [
      `Replayed its last ${plural(s.messages, 'message')} with passes of ${s.passSeconds.replayed} s (${passSource(s.passSeconds)}).`,
      computed,
      `Searched ${plural(s.search.candidates, 'setting')} (${num(s.search.refused)} refused by ebb config check) in ${plural(s.search.reads, 'read')} of the archive, ${plural(s.search.replays, 'replay')}, ${(s.search.ms / 1000).toFixed(1)} s.`,
    ],
  };
}

const cost = (o: DashboardReplayOutcome) =>
  o.costPerThousand === null ? '—' : `$${o.costPerThousand.toFixed(4)}`;

function lead(s: Suggested, priced: boolean): string {
  const replayed = `its last ${num(s.messages)} messages`;
  if (s.suggested === null)
    return `No setting reaches 0 emergencies at this channel's burst rate with passes of ${s.passSeconds.replayed} s; the closest has ${emergencies(s.closest?.outcome.emergencies ?? s.current.emergencies)}.`;
  if (s.block === null)
    return `The channel's own settings are the best found: 0 emergencies in ${replayed}, nothing to change.`;
  const o = s.suggested.outcome;
  const price = priced
    ? `${cost(o)} instead of ${cost(s.current)} per 1,000 messages`
    : `${num(Math.round(o.tokensPerThousand))} instead of ${num(Math.round(s.current.tokensPerThousand))} tokens per 1,000 messages`;
  return `These settings replay ${replayed} with 0 emergencies (the current ones: ${num(s.current.emergencies)}), at ${price}.`;
}

function would(s: Suggested): string[] {
  const values = Object.entries(s.closest?.values ?? {});
  const closest =
    values.length === 0
      ? "The closest is the channel's own settings."
      : `The closest sets ${values.map(([k, v]) => `${k} = ${v}`).join(', ')}.`;
  return [
    closest,
    ...s.whatWould.map(
      (w) =>
        `With ${w.change}: ${emergencies(w.outcome.emergencies)}${w.outcome.emergencies === 0 ? ' (this would)' : ''}.`,
    ),
  ];
}

function passSource(p: DashboardPassSeconds): string {
  switch (p.source) {
    case 'recorded':
      return `the 90th percentile of its ${num(p.runs)} recorded pass${p.runs === 1 ? '' : 'es'}${p.median === null ? '' : `; median ${Math.round(p.median * 10) / 10} s`}`;
    case 'option':
      return 'as asked';
    case 'default':
      return "no pass recorded yet: the monitor's assumption before one has landed";
  }
}
