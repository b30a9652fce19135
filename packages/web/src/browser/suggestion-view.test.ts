/**
 * The "Suggested settings" panel's words for each answer of the suggestion route: the table of
 * current against suggested (or closest), cost or tokens per 1,000 messages, the block, what would
 * reach 0 emergencies when nothing does, and the states with too little or no history.
 */
import { describe, expect, it } from 'vitest';
import type { DashboardReplayOutcome, DashboardSuggestion } from '../dashboard-api.js';
import { clock } from './format.js';
import { suggestionView } from './suggestion-view.js';

const computedAt = '2026-11-27T10:00:00.000Z';

const outcome = (o: Partial<DashboardReplayOutcome> = {}): DashboardReplayOutcome => ({
  messages: 2_400,
  emergencies: 4,
  passes: { background: 3, aggressive: 2, heals: 4 },
  peakUsage: 0.9875,
  cacheableShare: 0.8123,
  costPerThousand: 0.47081,
  tokensPerThousand: 123_456.4,
  ...o,
});

type Suggested = Extract<DashboardSuggestion, { status: 'suggested' }>;

const suggested = (s: Partial<Suggested> = {}): Suggested => ({
  key: 'web:bursty',
  computedAt,
  status: 'suggested',
  messages: 2_400,
  passSeconds: { replayed: 7.3, source: 'recorded', runs: 10, median: 6.95, p90: 7.31 },
  current: outcome(),
  suggested: {
    values: { background_threshold: 0.5, protect_recent: 10 },
    outcome: outcome({
      emergencies: 0,
      passes: { background: 9, aggressive: 0, heals: 0 },
      peakUsage: 0.8,
      cacheableShare: 0.9,
      costPerThousand: 0.43849,
      tokensPerThousand: 99_000,
    }),
  },
  closest: null,
  whatWould: [],
  block: '[channels."web:bursty".compaction]\nbackground_threshold = 0.5\nprotect_recent = 10',
  search: { candidates: 52, refused: 3, reads: 2, replays: 49, ms: 2_040 },
  ...s,
});

const cells = (v: ReturnType<typeof suggestionView>) =>
  Object.fromEntries(v.rows.map((r) => [r.label, r.cells.map((c) => c.text)]));

describe('suggestionView', () => {
  it('compares the current settings with the suggested ones, in dollars, and gives the block', () => {
    const v = suggestionView(suggested());
    expect(v.lead).toBe(
      'These settings replay its last 2,400 messages with 0 emergencies (the current ones: 4), at $0.4385 instead of $0.4708 per 1,000 messages.',
    );
    expect(v.tone).toBe('good');
    expect(v.columns).toEqual(['current', 'suggested']);
    expect(cells(v)).toEqual({
      emergencies: ['4', '0'],
      'passes (background / aggressive / heals)': ['3 / 2 / 4', '9 / 0 / 0'],
      'peak usage': ['98.8%', '80.0%'],
      'cacheable share of reply prompts': ['81.2%', '90.0%'],
      'cost per 1,000 messages': ['$0.4708', '$0.4385'],
    });
    expect(v.rows[0]?.cells.map((c) => c.tone)).toEqual(['bad', 'good']);
    expect(v.block).toBe(
      '[channels."web:bursty".compaction]\nbackground_threshold = 0.5\nprotect_recent = 10',
    );
    expect(v.would).toEqual([]);
    expect(v.notes).toEqual([
      'Replayed its last 2,400 messages with passes of 7.3 s (the 90th percentile of its 10 recorded passes; median 7 s).',
      `Computed at ${clock(Date.parse(computedAt))}, from the messages archived then; the same answer is served until ${clock(Date.parse(computedAt) + 10 * 60_000)}.`,
      'Searched 52 settings (3 refused by ebb config check) in 2 reads of the archive, 49 replays, 2.0 s.',
    ]);
  });

  it('counts tokens per 1,000 messages when a model has no price', () => {
    const s = suggested();
    const unpriced = (o: DashboardReplayOutcome) => ({ ...o, costPerThousand: null });
    const v = suggestionView({
      ...s,
      current: unpriced(s.current),
      suggested: s.suggested && { ...s.suggested, outcome: unpriced(s.suggested.outcome) },
    });
    expect(v.lead).toMatch(/, at 99,000 instead of 123,456 tokens per 1,000 messages\.$/);
    expect(cells(v)['tokens per 1,000 messages']).toEqual(['123,456', '99,000']);
    expect(cells(v)['cost per 1,000 messages']).toBeUndefined();
  });

  it('says when the channel’s own settings are the best found', () => {
    const s = suggested();
    const v = suggestionView({ ...s, current: outcome({ emergencies: 0 }), block: null });
    expect(v.lead).toBe(
      "The channel's own settings are the best found: 0 emergencies in its last 2,400 messages, nothing to change.",
    );
    expect(v.block).toBeNull();
  });

  it('names the closest setting and what would reach 0 emergencies when none does', () => {
    const v = suggestionView(
      suggested({
        passSeconds: { replayed: 60, source: 'option', runs: 0, median: null, p90: null },
        suggested: null,
        closest: { values: { background_threshold: 0.4 }, outcome: outcome({ emergencies: 1 }) },
        whatWould: [
          { change: 'context_window = 16000', outcome: outcome({ emergencies: 0 }) },
          {
            change: 'passes twice as fast (30.0 s: a faster summarizer_model)',
            outcome: outcome({ emergencies: 2 }),
          },
        ],
        block: null,
      }),
    );
    expect(v.lead).toBe(
      "No setting reaches 0 emergencies at this channel's burst rate with passes of 60 s; the closest has 1 emergency.",
    );
    expect(v.tone).toBe('bad');
    expect(v.columns).toEqual(['current', 'closest']);
    expect(cells(v).emergencies).toEqual(['4', '1']);
    expect(v.would).toEqual([
      'The closest sets background_threshold = 0.4.',
      'With context_window = 16000: 0 emergencies (this would).',
      'With passes twice as fast (30.0 s: a faster summarizer_model): 2 emergencies.',
    ]);
    expect(v.block).toBeNull();
    expect(v.notes[0]).toBe('Replayed its last 2,400 messages with passes of 60 s (as asked).');
  });

  it('shows the current settings alone when the search found nothing closer', () => {
    const v = suggestionView(suggested({ suggested: null, closest: null, block: null }));
    expect(v.columns).toEqual(['current']);
    expect(cells(v).emergencies).toEqual(['4']);
    expect(v.lead).toMatch(/the closest has 4 emergencies\.$/);
    expect(v.would).toEqual(["The closest is the channel's own settings."]);
  });

  it('says how much history a quiet channel needs, and when nothing is archived', () => {
    const little = suggestionView({
      key: 'web:quiet',
      computedAt,
      status: 'too_little_history',
      messages: 30,
      neededMessages: 1_234,
    });
    expect(little.lead).toBe(
      "Too little history to tune from: 30 messages archived; a suggestion needs about 1,234 at this channel's pace (enough traffic for its replay to compact more than once).",
    );
    expect(little.rows).toEqual([]);
    expect(little.block).toBeNull();
    // The server computes again once the channel has what it needed, and the page asks then.
    expect(little.notes).toEqual([
      expect.stringMatching(/; asked again once the channel has 1,234 messages archived\.$/),
    ]);
    const none = suggestionView({ key: 'web:new', computedAt, status: 'no_history' });
    expect(none.lead).toMatch(/^Nothing archived yet/);
    expect(none.notes).toEqual([
      expect.stringMatching(/; asked again once the channel has a message archived\.$/),
    ]);
  });

  it('says where the pass duration came from when none is recorded', () => {
    const v = suggestionView(
      suggested({ passSeconds: { replayed: 10, source: 'default', runs: 0, median: null, p90: null } }),
    );
    expect(v.notes[0]).toBe(
      "Replayed its last 2,400 messages with passes of 10 s (no pass recorded yet: the monitor's assumption before one has landed).",
    );
  });
});
