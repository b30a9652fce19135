/**
 * The monitoring files of `deploy/`, read for the tests that check them: the Grafana dashboard's
 * panels and queries, and the Prometheus alert rules.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const DEPLOY = new URL('../../../deploy/', import.meta.url);
export const DASHBOARD_FILE = fileURLToPath(new URL('grafana/ebb.json', DEPLOY));
export const ALERTS_FILE = fileURLToPath(new URL('prometheus/alerts.yml', DEPLOY));

export interface GrafanaTarget {
  readonly expr?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
}
export interface GrafanaPanel {
  readonly id?: number;
  readonly type?: string;
  readonly title?: string;
  readonly datasource?: { readonly type?: string; readonly uid?: string };
  readonly targets?: readonly GrafanaTarget[];
  readonly panels?: readonly GrafanaPanel[];
}
export interface GrafanaDashboard {
  readonly __inputs?: readonly { name: string; type: string; pluginId: string }[];
  readonly uid?: string;
  readonly title?: string;
  readonly panels?: readonly GrafanaPanel[];
}

export interface AlertRule {
  readonly alert?: string;
  readonly expr?: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

export function readDashboard(): GrafanaDashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as GrafanaDashboard;
}

export function dashboardPanels(dashboard: GrafanaDashboard): GrafanaPanel[] {
  return (dashboard.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
}

/** `[where, expr]` of every query of the dashboard. */
export function dashboardExprs(dashboard: GrafanaDashboard): [string, string][] {
  return dashboardPanels(dashboard).flatMap((panel) =>
    (panel.targets ?? []).map((t): [string, string] => [`panel "${panel.title}"`, t.expr ?? '']),
  );
}

export function readAlertRules(): AlertRule[] {
  const doc = parseYaml(readFileSync(ALERTS_FILE, 'utf8')) as { groups?: { rules?: AlertRule[] }[] };
  return (doc.groups ?? []).flatMap((g) => g.rules ?? []);
}
