/**
 * The selected channel's usage over time, as inline SVG: a line for usage, a dashed line per
 * threshold and a mark per pass, microcompaction or truncation in its tier's colour.
 */
import type { DashboardUsage, DashboardUsageMark } from '../dashboard-api.js';
import { api, newest, reason } from './api.js';
import { $, clock, el, pct, svg, thresholdList } from './dom.js';
import { state } from './state.js';

const TIER_COLOUR: Readonly<Record<DashboardUsageMark['tier'], string>> = {
  microcompact: '#7c3aed',
  background: '#ca8a04',
  aggressive: '#ea580c',
  emergency: '#dc2626',
};
const W = 560;
const H = 230;
const L = 34;
const R = 112;
const T = 10;
const B = 24;

export async function loadUsage(): Promise<void> {
  const key = state.key;
  if (key === null) return;
  const current = newest('usage');
  let u: DashboardUsage | undefined;
  try {
    u = await api.usage(key);
  } catch (err) {
    $('chart').replaceChildren(el('p', { class: 'note', text: `Could not load usage: ${reason(err)}` }));
    return;
  }
  if (key !== state.key || !current() || !u) return;
  state.usage = u;
  drawChart(u);
}

/** The chart's description: its span of time, peak and last usage, and what moved usage down. */
function describe(u: DashboardUsage, t0: number, t1: number): string {
  const pts = u.points;
  const max = pts.reduce((m, p) => Math.max(m, p.usage), 0);
  const passes = u.marks.filter((m) => m.jobId);
  const other = u.marks.length - passes.length;
  const byTier = new Map<string, number>();
  for (const m of passes) byTier.set(m.tier, (byTier.get(m.tier) ?? 0) + 1);
  const tiers = [...byTier].map(([tier, n]) => `${n} ${tier}`).join(', ');
  return (
    `${pts.length} points from ${clock(t0)} to ${clock(t1)}, peak ${pct(max)}, now ${pct(pts.at(-1)?.usage ?? 0)}; ` +
    `${passes.length} passes${passes.length ? ` (${tiers})` : ''}` +
    `${other ? `, ${other} microcompactions or truncations` : ''}.`
  );
}

function drawChart(u: DashboardUsage): void {
  const box = $('chart');
  const pts = u.points;
  if (pts.length <= 1 && u.marks.length === 0) {
    box.replaceChildren(
      el('p', { class: 'note', text: 'No history of usage yet: every turn from now on adds a point.' }),
    );
    return;
  }
  const times = [...pts.map((p) => p.at), ...u.marks.map((m) => m.at)];
  let t0 = Math.min(...times);
  let t1 = Math.max(...times);
  if (!(t1 > t0)) {
    t0 -= 30_000;
    t1 += 30_000;
  }
  const top = Math.max(1, ...pts.map((p) => p.usage), ...u.marks.map((m) => m.usage));
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v: number) => T + (1 - v / top) * (H - T - B);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'chart-t chart-d' });
  root.append(svg('title', { id: 'chart-t' }, `Usage of ${u.key} over time`));
  root.append(svg('desc', { id: 'chart-d' }, describe(u, t0, t1)));
  root.append(
    svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: '#fbfcfd', stroke: '#e5e7eb' }),
  );
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    if (v > top) continue;
    root.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eef0f4' }));
    root.append(
      svg(
        'text',
        { x: L - 4, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#566074' },
        `${Math.round(v * 100)}%`,
      ),
    );
  }
  const thresholds = thresholdList(u.thresholds);
  for (const [name, at] of thresholds)
    root.append(
      svg('line', {
        x1: L,
        x2: W - R,
        y1: y(at),
        y2: y(at),
        stroke: TIER_COLOUR[name],
        'stroke-dasharray': '5 3',
        'stroke-width': 1.5,
        'data-threshold': name,
      }),
    );
  // Labels right of the plot, highest first, nudged apart when thresholds are close.
  let lastY = Number.NEGATIVE_INFINITY;
  for (const [name, at] of [...thresholds].sort((a, b) => b[1] - a[1])) {
    const ly = Math.max(y(at) + 4, lastY + 11);
    lastY = ly;
    root.append(
      svg(
        'text',
        { x: W - R + 4, y: ly, 'font-size': 10, fill: TIER_COLOUR[name] },
        `${name} ${Math.round(at * 100)}%`,
      ),
    );
  }
  if (pts.length) {
    const d = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p.at).toFixed(1)} ${y(p.usage).toFixed(1)}`).join(' ');
    root.append(
      svg('path', {
        d,
        fill: 'none',
        stroke: '#2563eb',
        'stroke-width': 1.8,
        'stroke-linejoin': 'round',
        class: 'usage-line',
      }),
    );
  }
  for (const m of u.marks) {
    const hollow = m.status === 'failed' || m.status === 'stale' || m.status === 'skipped';
    const c = svg('circle', {
      cx: x(m.at),
      cy: y(m.usage),
      r: 5,
      fill: hollow ? '#fff' : TIER_COLOUR[m.tier],
      stroke: TIER_COLOUR[m.tier],
      'stroke-width': 2,
      class: 'pass-mark',
      'data-tier': m.tier,
    });
    c.append(svg('title', {}, `${m.tier} ${m.status} at ${pct(m.usage)}, ${clock(m.at)}`));
    root.append(c);
  }
  root.append(svg('text', { x: L, y: H - 6, 'font-size': 10, fill: '#566074' }, clock(t0)));
  root.append(
    svg('text', { x: W - R, y: H - 6, 'font-size': 10, fill: '#566074', 'text-anchor': 'end' }, clock(t1)),
  );
  box.replaceChildren(root);
}
