/**
 * The monitoring files of `deploy/` through Prometheus's own checker, `promtool` (Debian's
 * `prometheus` package; `.ci/run` installs it, and without it these tests fail, saying how to install
 * it): the alert rules load, every query of the Grafana dashboard parses as PromQL, each alert's
 * expression is true in the trouble it names and false on a healthy Ebb, and each alert fires once
 * its `for:` has passed and not a minute before, with the labels and annotations it is written to
 * page with (`promtool test rules` over made-up series).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ALERT_CASES } from '../test/alert-rule-cases.js';
import {
  ALERTS_FILE,
  type AlertRule,
  dashboardPanels,
  readAlertRules,
  readDashboard,
} from '../test/monitoring-files.js';
import { INSTALL_PROMTOOL, runPromtool } from '../test/promtool.js';

const scratch = mkdtempSync(join(tmpdir(), 'ebb-promtool-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** Files written to `scratch` so far, to name the next. */
let written = 0;

/** Runs promtool (see `runPromtool`), its output in the next file of `scratch`. */
function promtool(...args: string[]): { code: number; output: string } {
  return runPromtool(join(scratch, `promtool-${++written}.out`), args);
}

/** Grafana's variables, as Prometheus would see them once Grafana has filled them in. */
function withGrafanaVariables(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '5m')
    .replaceAll('$__interval', '1m')
    .replaceAll('$__range', '1h');
}

/** A file of promtool unit tests: `tests` of `ruleFile`, evaluated once a minute. */
function unitTests(tests: readonly object[], ruleFile = ALERTS_FILE): string {
  const file = join(scratch, `rules-${++written}.test.yml`);
  writeFileSync(file, toYaml({ rule_files: [ruleFile], evaluation_interval: '1m', tests }));
  return file;
}

function inputSeries(series: Readonly<Record<string, string>>): { series: string; values: string }[] {
  return Object.entries(series).map(([name, values]) => ({ series: name, values }));
}

/** A rule file of recording rules, one per expression: what `promtool check rules` parses. */
function recordingRules(exprs: readonly string[]): string {
  const file = join(scratch, `queries-${exprs.length}-${Date.now()}.yml`);
  const rules = exprs.map((expr, i) => ({ record: `ebb:query_${i}`, expr }));
  writeFileSync(file, toYaml({ groups: [{ name: 'dashboard', rules }] }));
  return file;
}

describe('promtool', () => {
  it('is asked for by name, with the command that installs it, where it is not on PATH', () => {
    const empty = join(scratch, 'empty-path');
    mkdirSync(empty);
    expect(() => runPromtool(join(scratch, 'missing.out'), ['--version'], { PATH: empty })).toThrow(
      `promtool is not installed (no promtool on PATH). These tests check deploy/'s alerts and Grafana queries with Prometheus's own checker; install it with \`${INSTALL_PROMTOOL}\``,
    );
    // The command CI runs, so the advice is one that works.
    expect(readFileSync(fileURLToPath(new URL('../../../.ci/run', import.meta.url)), 'utf8')).toContain(
      INSTALL_PROMTOOL,
    );
  });
});

describe('deploy/prometheus/alerts.yml under promtool', () => {
  it('loads as a rule file', () => {
    const { code, output } = promtool('check', 'rules', ALERTS_FILE);
    expect(output).toContain(`SUCCESS: ${readAlertRules().length} rules found`);
    expect(code, output).toBe(0);
  });
});

describe('deploy/grafana/ebb.json under promtool', () => {
  it('has only queries that parse as PromQL', () => {
    const exprs = dashboardPanels(readDashboard()).flatMap((panel) =>
      (panel.targets ?? []).map((target) => withGrafanaVariables(target.expr ?? '')),
    );
    expect(exprs.length).toBeGreaterThan(20);
    const { code, output } = promtool('check', 'rules', recordingRules(exprs));
    expect(output).toContain(`SUCCESS: ${exprs.length} rules found`);
    expect(code, output).toBe(0);
  });

  it('would be refused with a query that does not parse', () => {
    const { code, output } = promtool(
      'check',
      'rules',
      recordingRules(['sum(rate(ebb_turns_total[5m])', 'sum(rate(ebb_turns_total[5m]))']),
    );
    expect(code).not.toBe(0);
    expect(output).toMatch(/unclosed left parenthesis|parse error/);
  });
});

/**
 * For each alert, series (one sample a minute, promtool's notation: `0+1x120` counts up by one for
 * two hours) in which it should fire, and series in which it should stay quiet. The expression is
 * read from alerts.yml and evaluated at `at`; `fires` is the sample it gives (labels and value).
 */
interface Scenario {
  readonly alert: string;
  readonly what: string;
  readonly series: Record<string, string>;
  readonly at: string;
  readonly fires?: { readonly labels: string; readonly value: number };
}

const SCENARIOS: readonly Scenario[] = [
  {
    alert: 'EbbEmergencyTruncations',
    what: 'one emergency a minute',
    series: { ebb_emergency_truncations_total: '0+1x120' },
    at: '70m',
    fires: { labels: '{}', value: 60 },
  },
  {
    alert: 'EbbEmergencyTruncations',
    what: 'three in an hour, the safety net working',
    series: { ebb_emergency_truncations_total: '0x10 1x20 2x20 3x70' },
    at: '70m',
  },
  {
    alert: 'EbbCompactionPassesFailing',
    what: 'one failed try to every completed one',
    series: {
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+2x60',
      'ebb_compaction_passes_total{outcome="failed",tier="background"}': '0+2x60',
    },
    at: '30m',
    fires: { labels: '{}', value: 0.5 },
  },
  {
    alert: 'EbbCompactionPassesFailing',
    what: 'one failed try in thirty',
    series: {
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+29x60',
      'ebb_compaction_passes_total{outcome="failed",tier="background"}': '0+1x60',
    },
    at: '30m',
  },
  {
    alert: 'EbbCompactionStuck',
    what: 'a stuck run settled every minute',
    series: { 'ebb_compaction_reconciled_total{action="requeued"}': '0+1x120' },
    at: '70m',
    fires: { labels: '{}', value: 60 },
  },
  {
    alert: 'EbbCompactionStuck',
    what: 'two settled in an hour',
    series: { 'ebb_compaction_reconciled_total{action="requeued"}': '0x20 1x20 2x80' },
    at: '70m',
  },
  {
    alert: 'EbbCircuitBreakerOpen',
    what: 'a channel skipped by its breaker',
    series: { 'ebb_compaction_breaker_skips_total{tier="background"}': '0x10 1+1x20' },
    at: '20m',
    fires: { labels: '{}', value: 10 },
  },
  {
    alert: 'EbbCircuitBreakerOpen',
    what: 'no skip for the last 15 minutes',
    series: { 'ebb_compaction_breaker_skips_total{tier="background"}': '0x10 4x40' },
    at: '40m',
  },
  {
    alert: 'EbbFallbackShareHigh',
    what: 'half the completed passes on the fallback',
    series: {
      ebb_compaction_fallbacks_total: '0+1x60',
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+2x60',
    },
    at: '40m',
    fires: { labels: '{}', value: 0.5 },
  },
  {
    alert: 'EbbFallbackShareHigh',
    what: 'one pass in ten on the fallback',
    series: {
      ebb_compaction_fallbacks_total: '0+1x60',
      'ebb_compaction_passes_total{outcome="completed",tier="background"}': '0+10x60',
    },
    at: '40m',
  },
  {
    alert: 'EbbQueueJobsWaiting',
    what: 'a job waiting five minutes',
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '300x20' },
    at: '10m',
    fires: { labels: '{queue="compaction"}', value: 300 },
  },
  {
    alert: 'EbbQueueJobsWaiting',
    what: 'jobs taken within half a minute',
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '30x20' },
    at: '10m',
  },
  {
    alert: 'EbbQueueStalled',
    what: 'a job waiting fifteen minutes',
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '900x20' },
    at: '10m',
    fires: { labels: '{queue="compaction"}', value: 900 },
  },
  {
    alert: 'EbbQueueStalled',
    what: 'a job waiting five minutes, slow but moving',
    series: { 'ebb_queue_oldest_job_age_seconds{queue="compaction"}': '300x20' },
    at: '10m',
  },
  {
    alert: 'EbbQueueStatsUnreadable',
    what: 'every scrape failing to read the queue',
    series: { ebb_queue_stats_errors_total: '0+1x30' },
    at: '20m',
    fires: { labels: '{}', value: 10 },
  },
  {
    alert: 'EbbQueueStatsUnreadable',
    what: 'Redis read again for the last ten minutes',
    series: { ebb_queue_stats_errors_total: '0+1x5 5x30' },
    at: '20m',
  },
  {
    alert: 'EbbSpendLimitReached',
    what: 'a channel reaching its daily limit every minute',
    series: { 'ebb_budget_reached_total{scope="channel",period="day",over="notice"}': '0+1x120' },
    at: '70m',
    fires: { labels: '{period="day",scope="channel"}', value: 60 },
  },
  {
    alert: 'EbbSpendLimitReached',
    what: 'limits reached over an hour ago, none since',
    series: { 'ebb_budget_reached_total{scope="workspace",period="month",over="silent"}': '0+1x10 10x120' },
    at: '90m',
  },
];

describe('the alerts under promtool test rules', () => {
  const rules = new Map(readAlertRules().map((rule) => [rule.alert, rule.expr ?? '']));

  it('has a scenario that fires and one that stays quiet for every alert', () => {
    for (const alert of rules.keys()) {
      const mine = SCENARIOS.filter((s) => s.alert === alert);
      expect(
        mine.some((s) => s.fires),
        `${alert} fires somewhere`,
      ).toBe(true);
      expect(
        mine.some((s) => !s.fires),
        `${alert} stays quiet somewhere`,
      ).toBe(true);
    }
  });

  it('fire in the trouble they name and stay quiet on a healthy Ebb', () => {
    const tests = SCENARIOS.map((scenario) => {
      const expr = rules.get(scenario.alert);
      expect(expr, scenario.alert).toBeDefined();
      return {
        name: `${scenario.alert}: ${scenario.what}`,
        interval: '1m',
        input_series: inputSeries(scenario.series),
        promql_expr_test: [
          {
            expr,
            eval_time: scenario.at,
            exp_samples: scenario.fires
              ? [{ labels: scenario.fires.labels, value: scenario.fires.value }]
              : [],
          },
        ],
      };
    });
    const { code, output } = promtool('test', 'rules', unitTests(tests));
    expect(output).toContain('SUCCESS');
    expect(code, output).toBe(0);
  });
});

/**
 * promtool's `alert_rule_test` for each case: pending (quiet) the minute before it fires, then
 * firing with the case's labels and annotations. The description of a case without one is
 * alerts.yml's own text, which must then have no template to render.
 */
function alertRuleTests(rules: readonly AlertRule[], cases = ALERT_CASES): object[] {
  return cases.map((c) => {
    const inFile = rules.find((rule) => rule.alert === c.alert)?.annotations?.description ?? '';
    expect(c.description ?? inFile, `${c.alert} description`).not.toContain('{{');
    return {
      name: `${c.alert}: fires at minute ${c.firesAt}`,
      interval: '1m',
      input_series: inputSeries(c.series),
      alert_rule_test: [
        { alertname: c.alert, eval_time: `${c.firesAt - 1}m`, exp_alerts: [] },
        {
          alertname: c.alert,
          eval_time: `${c.firesAt}m`,
          exp_alerts: [
            {
              exp_labels: c.labels,
              exp_annotations: { summary: c.summary, description: c.description ?? inFile },
            },
          ],
        },
      ],
    };
  });
}

/** A copy of alerts.yml with `alert`'s `for:` moved by `minutes`. */
function withFor(alert: string, minutes: number): string {
  const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as { groups: { rules: AlertRule[] }[] };
  const rule = doc.groups.flatMap((g) => g.rules).find((r) => r.alert === alert);
  const now = /^(\d+)m$/.exec(rule?.for ?? '');
  if (!rule || !now) throw new Error(`${alert} has no \`for:\` in minutes (${rule?.for})`);
  Object.assign(rule, { for: `${Number(now[1]) + minutes}m` });
  const file = join(scratch, `alerts-${alert}-${minutes}.yml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

describe('the alerts under promtool alert_rule_test', () => {
  const rules = readAlertRules();

  it('has a case for every alert', () => {
    expect(ALERT_CASES.map((c) => c.alert).sort()).toEqual(rules.map((r) => r.alert).sort());
  });

  it('fire once their `for:` has passed, with the labels and annotations of alerts.yml', () => {
    const { code, output } = promtool('test', 'rules', unitTests(alertRuleTests(rules)));
    expect(output).toContain('SUCCESS');
    expect(code, output).toBe(0);
  });

  it('would fail with the `for:` of any alert a minute shorter or longer', () => {
    // Each alert's own cases against a copy of alerts.yml with its `for:` moved, in one promtool run.
    const runs = ALERT_CASES.flatMap(({ alert }) =>
      [-1, 1].map((minutes) => ({
        alert,
        minutes,
        file: unitTests(
          alertRuleTests(
            rules,
            ALERT_CASES.filter((c) => c.alert === alert),
          ),
          withFor(alert, minutes),
        ),
      })),
    );
    const { output } = promtool('test', 'rules', ...runs.map((run) => run.file));
    const reports = new Map(
      output
        .split('Unit Testing:  ')
        .slice(1)
        .map((report) => [report.slice(0, report.indexOf('\n')).trim(), report]),
    );
    for (const { alert, minutes, file } of runs) {
      const report = reports.get(file) ?? '(no report)';
      expect(report, `${alert} with its for: ${minutes}m`).toMatch(/^\s+FAILED:/m);
      expect(report).toContain(`alertname: ${alert}, time: `);
    }
  });
});
