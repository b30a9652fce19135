/**
 * The Grafana dashboard (`deploy/grafana/ebb.json`) and the Prometheus alerts
 * (`deploy/prometheus/alerts.yml`) against what `/metrics` serves: both parse, have the shape their
 * importers need, and name only metrics the exposition has, so renaming a metric in `metrics.ts`
 * without them fails here rather than in an operator's empty panel or silent alert. That they parse
 * and alert when they should is `monitoring-promtool.test.ts`'s, with Prometheus's own checker.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { dashboardExprs, dashboardPanels, readAlertRules, readDashboard } from '../test/monitoring-files.js';
import { createMetrics } from './metrics.js';
import { mountObservability } from './routes.js';

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's import placeholder, filled in at import
const DATASOURCE_INPUT = '${DS_PROMETHEUS}';

/** Words of PromQL that look like metric names: keywords, modifiers, the special floats. */
const PROMQL_WORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'offset',
  'inf',
  'nan',
  'atan2',
]);

/**
 * The metric names an expression selects. Strings, label matchers (`{...}`), range and subquery
 * brackets, grouping label lists (`by (le)`), Grafana variables and numbers are not names; an
 * identifier followed by `(` is a function or aggregation.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^{}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ')
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ');
  const names = new Set<string>();
  for (const match of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const [word] = match;
    const before = bare[match.index - 1] ?? ' ';
    const after = bare.slice(match.index + word.length);
    if (/[0-9.]/.test(before)) continue; // the exponent of 1e-9, the unit of a duration
    if (/^\s*\(/.test(after)) continue;
    if (PROMQL_WORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names];
}

/** Every metric name `GET /metrics` serves, with the `_bucket`, `_sum` and `_count` series of histograms. */
async function servedMetricNames(): Promise<Set<string>> {
  // The default registry and process metrics, as the bot and `ebb worker` create them, with a queue
  // to read the queue gauges from (the bot's BullMQ queue).
  const metrics = createMetrics({
    prices: () => ({ m: { input_per_mtok: 1, output_per_mtok: 2 } }),
    queue: {
      name: 'compaction',
      counts: async () => ({ waiting: 1 }),
      oldestWaitingAgeMs: async () => 5_000,
    },
  });
  // One of each kind of sample, so labelled series that start empty are served too.
  metrics.onCompactionEvent({
    event: 'compaction.reconciled',
    channel: 'web:a',
    tier: 'background',
    action: 'requeued',
  });
  metrics.onLlmCalls([
    {
      purpose: 'summary',
      model: 'm',
      inputTokens: 1,
      outputTokens: 1,
      durationMs: 1,
      attempts: 2,
      failedTries: ['x'],
    },
  ]);
  metrics.onTurn({ platform: 'web', answered: true, usage: 0.5, durationMs: 10 });
  metrics.onToolCall({ tool: 'search_history', status: 'ok', durationMs: 5 });
  metrics.observeContextCache(() => ({
    hits: 9,
    misses: 1,
    reloads: 0,
    deltaLoads: 0,
    appendsHeard: 0,
    evictions: 0,
    channels: 1,
    bytes: 4_096,
    budgetBytes: 2 ** 29,
  }));

  const app = new Hono();
  const health = async () => ({
    ok: true,
    version: '0.0.0',
    checks: {},
    fallbacks: {},
    degraded: {},
    mcp: {},
    contextCache: null,
  });
  mountObservability(app, { metrics, health });
  const response = await app.request('/metrics');
  expect(response.status).toBe(200);
  const text = await response.text();

  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const typed = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typed?.[1] !== undefined) {
      names.add(typed[1]);
      if (typed[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(typed[1] + s);
      if (typed[2] === 'summary') for (const s of ['_sum', '_count']) names.add(typed[1] + s);
    } else if (line !== '' && !line.startsWith('#')) {
      names.add(line.split(/[{ ]/)[0] ?? '');
    }
  }
  return names;
}

/** Names the expressions use that `/metrics` does not serve, as `where: name`. */
function unknownNames(exprs: readonly [string, string][], served: ReadonlySet<string>): string[] {
  return exprs.flatMap(([where, expr]) =>
    metricNames(expr)
      .filter((name) => !served.has(name))
      .map((name) => `${where}: ${name}`),
  );
}

describe('metricNames', () => {
  it('finds the selected metrics and skips functions, keywords, labels, strings, variables and numbers', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, tier) (rate(ebb_compaction_pass_duration_seconds_bucket{tier!="x"}[$__rate_interval])))',
      ),
    ).toEqual(['ebb_compaction_pass_duration_seconds_bucket']);
    expect(
      metricNames(
        'sum(rate(a_total{outcome=~"completed|failed"}[5m] offset 1h)) / on (job) group_left (tier) b_total > bool 1e-9 unless c',
      ),
    ).toEqual(['a_total', 'b_total', 'c']);
    expect(
      metricNames(
        'sum(increase(ebb_llm_cost_usd_total[$__range])) * 3600 + label_replace(x, "y", "$1", "z", "ebb_(.*)")',
      ),
    ).toEqual(['ebb_llm_cost_usd_total', 'x']);
  });
});

describe('deploy/grafana/ebb.json', () => {
  it('is a dashboard Grafana imports with a Prometheus data source chosen at import', () => {
    const dashboard = readDashboard();
    expect(dashboard.title).toBe('Ebb');
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    const panels = dashboardPanels(dashboard);
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of panels.filter((p) => p.type !== 'row')) {
      expect(panel.datasource, `panel "${panel.title}"`).toEqual({
        type: 'prometheus',
        uid: DATASOURCE_INPUT,
      });
      expect(panel.targets?.length, `panel "${panel.title}"`).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource?.uid).toBe(DATASOURCE_INPUT);
        expect(target.expr, `panel "${panel.title}"`).toMatch(/\S/);
      }
    }
  });

  it('names only metrics /metrics serves', async () => {
    const served = await servedMetricNames();
    const exprs = dashboardExprs(readDashboard());
    expect(exprs.length).toBeGreaterThan(20);
    expect(unknownNames(exprs, served)).toEqual([]);
  });

  it('shows usage, passes, emergencies, durations, fallbacks, the queue, turns, tokens, cost and tools', () => {
    const used = new Set(dashboardExprs(readDashboard()).flatMap(([, expr]) => metricNames(expr)));
    for (const name of [
      'ebb_context_usage_bucket',
      'ebb_compaction_passes_total',
      'ebb_emergency_truncations_total',
      'ebb_compaction_pass_duration_seconds_bucket',
      'ebb_compaction_fallbacks_total',
      'ebb_queue_depth',
      'ebb_queue_oldest_job_age_seconds',
      'ebb_turn_duration_seconds_bucket',
      'ebb_llm_tokens_total',
      'ebb_llm_cost_usd_total',
      'ebb_microcompacted_results_total',
      'ebb_tool_calls_total',
    ])
      expect(used, name).toContain(name);
  });
});

describe('deploy/prometheus/alerts.yml', () => {
  it('is a rule file whose every alert waits, has a severity and says what happened and what to do', () => {
    const rules = readAlertRules();
    expect(rules.length).toBeGreaterThan(5);
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^Ebb[A-Za-z]+$/);
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['warning', 'critical'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toMatch(/\S/);
      expect(rule.annotations?.description?.length, rule.alert).toBeGreaterThan(40);
      expect(rule.expr, rule.alert).toMatch(/\S/);
    }
  });

  it('names only metrics /metrics serves', async () => {
    const served = await servedMetricNames();
    const exprs = readAlertRules().map((r): [string, string] => [`alert ${r.alert}`, r.expr ?? '']);
    expect(unknownNames(exprs, served)).toEqual([]);
  });

  it('watches emergencies, failed and stuck passes, the breaker, the queue age and the fallback share', () => {
    const used = new Set(readAlertRules().flatMap((r) => metricNames(r.expr ?? '')));
    for (const name of [
      'ebb_emergency_truncations_total',
      'ebb_compaction_passes_total',
      'ebb_compaction_reconciled_total',
      'ebb_compaction_breaker_skips_total',
      'ebb_queue_oldest_job_age_seconds',
      'ebb_compaction_fallbacks_total',
    ])
      expect(used, name).toContain(name);
  });
});
