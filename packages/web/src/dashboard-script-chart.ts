/**
 * The usage chart in the dashboard's script (`dashboard-script.ts` puts it in place): `loadUsage`
 * fetches the selected channel's usage over time and `drawChart` draws it as inline SVG, a line for
 * usage, a dashed line per threshold and a mark per pass in its tier's colour.
 *
 * Not a script of its own but a part of the one function that `DASHBOARD_SCRIPT` is: it uses that
 * function's helpers (`$`, `el`, `pct`, `clock`, `api`, `enc`, `newest`) and `state`, and follows its
 * rule (no template literals, no backslashes).
 */
export const USAGE_CHART_SCRIPT = `
  // ---- usage over time ----
  async function loadUsage() {
    const key = state.key, current = newest('usage');
    let u;
    try { u = await api('/api/dashboard/channels/' + enc(key) + '/usage'); } catch (err) { $('chart').replaceChildren(el('p', { class: 'note', text: 'Could not load usage: ' + err.message })); return; }
    if (key !== state.key || !current() || !u) return;
    state.usage = u;
    drawChart();
  }

  const SVGNS = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs, text) => { const e = document.createElementNS(SVGNS, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); if (text !== undefined) e.textContent = text; return e; };
  const TIER_COLOUR = { microcompact: '#7c3aed', background: '#ca8a04', aggressive: '#ea580c', emergency: '#dc2626' };

  function drawChart() {
    const u = state.usage; const box = $('chart');
    if (!u) return;
    const pts = u.points;
    if (pts.length <= 1 && u.marks.length === 0) { box.replaceChildren(el('p', { class: 'note', text: 'No history of usage yet: every turn from now on adds a point.' })); return; }
    const W = 560, H = 230, L = 34, R = 112, T = 10, B = 24;
    const times = pts.map((p) => p.at).concat(u.marks.map((m) => m.at));
    let t0 = Math.min(...times), t1 = Math.max(...times);
    if (!(t1 > t0)) { t0 -= 30000; t1 += 30000; }
    const top = Math.max(1, ...pts.map((p) => p.usage), ...u.marks.map((m) => m.usage));
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - v / top) * (H - T - B);
    const max = pts.reduce((m, p) => Math.max(m, p.usage), 0);
    const passes = u.marks.filter((m) => m.jobId);
    const other = u.marks.length - passes.length;
    const root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-labelledby': 'chart-t chart-d' });
    root.append(svg('title', { id: 'chart-t' }, 'Usage of ' + u.key + ' over time'));
    root.append(svg('desc', { id: 'chart-d' }, pts.length + ' points from ' + clock(t0) + ' to ' + clock(t1) + ', peak ' + pct(max) + ', now ' + pct(pts.length ? pts[pts.length - 1].usage : 0) + '; ' + passes.length + ' passes' + (passes.length ? ' (' + Object.entries(passes.reduce((c, m) => { c[m.tier] = (c[m.tier] || 0) + 1; return c; }, {})).map(([k, v]) => v + ' ' + k).join(', ') + ')' : '') + (other ? ', ' + other + ' microcompactions or truncations' : '') + '.'));
    root.append(svg('rect', { x: L, y: T, width: W - L - R, height: H - T - B, fill: '#fbfcfd', stroke: '#e5e7eb' }));
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      if (v > top) continue;
      root.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#eef0f4' }));
      root.append(svg('text', { x: L - 4, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#566074' }, Math.round(v * 100) + '%'));
    }
    const labels = [];
    for (const [name, at] of Object.entries(u.thresholds)) {
      root.append(svg('line', { x1: L, x2: W - R, y1: y(at), y2: y(at), stroke: TIER_COLOUR[name], 'stroke-dasharray': '5 3', 'stroke-width': 1.5, 'data-threshold': name }));
      labels.push([name, at]);
    }
    // Labels right of the plot, nudged apart when thresholds are close.
    labels.sort((a, b) => b[1] - a[1]);
    let lastY = -Infinity;
    for (const [name, at] of labels) {
      const ly = Math.max(y(at) + 4, lastY + 11); lastY = ly;
      root.append(svg('text', { x: W - R + 4, y: ly, 'font-size': 10, fill: TIER_COLOUR[name] }, name + ' ' + Math.round(at * 100) + '%'));
    }
    if (pts.length) {
      const d = pts.map((p, i) => (i ? 'L' : 'M') + x(p.at).toFixed(1) + ' ' + y(p.usage).toFixed(1)).join(' ');
      root.append(svg('path', { d, fill: 'none', stroke: '#2563eb', 'stroke-width': 1.8, 'stroke-linejoin': 'round', class: 'usage-line' }));
    }
    for (const m of u.marks) {
      const c = svg('circle', { cx: x(m.at), cy: y(m.usage), r: 5, fill: m.status === 'failed' || m.status === 'stale' || m.status === 'skipped' ? '#fff' : TIER_COLOUR[m.tier], stroke: TIER_COLOUR[m.tier], 'stroke-width': 2, class: 'pass-mark', 'data-tier': m.tier });
      c.append(svg('title', {}, m.tier + ' ' + m.status + ' at ' + pct(m.usage) + ', ' + clock(m.at)));
      root.append(c);
    }
    root.append(svg('text', { x: L, y: H - 6, 'font-size': 10, fill: '#566074' }, clock(t0)));
    root.append(svg('text', { x: W - R, y: H - 6, 'font-size': 10, fill: '#566074', 'text-anchor': 'end' }, clock(t1)));
    box.replaceChildren(root);
  }
`;
