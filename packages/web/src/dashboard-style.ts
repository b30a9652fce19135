/** The dashboard page's CSS (see `dashboard-page.ts`). Tier colours match the chart's marks. */
export const DASHBOARD_STYLE = `
  :root { --ink: #1d2330; --muted: #566074; --line: #dde2ea; --bg: #f4f6f9; --accent: #2563eb;
    --micro: #7c3aed; --background: #ca8a04; --aggressive: #ea580c; --emergency: #dc2626; --ok: #15803d; }
  * { box-sizing: border-box; }
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: var(--ink); background: var(--bg); }
  .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  .skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 2; }
  header { background: var(--ink); color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: baseline; }
  header small { color: #b8c0d0; } header a { color: #a8c8ff; }
  .stream { margin-left: auto; font-size: 12px; color: #b8c0d0; }
  .stream.live::before { content: "● "; color: #4ade80; }
  main { display: grid; grid-template-columns: minmax(330px, 400px) 1fr; gap: 12px; padding: 12px; align-items: start; }
  .panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; min-width: 0; }
  h2 { font-size: 15px; margin: 0 0 8px; } h2:focus { outline: 2px solid var(--accent); outline-offset: 2px; }
  h3 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 6px; }
  .count { color: var(--muted); font-weight: normal; font-size: 13px; }
  .note { font-size: 12px; color: var(--muted); margin: 4px 0; }
  button { font: inherit; cursor: pointer; }
  :focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
  .controls { display: flex; gap: 8px; flex-wrap: wrap; margin-bottom: 6px; font-size: 12px; color: var(--muted); }
  .controls input, .controls select { font: inherit; padding: 3px 5px; }
  .controls input { width: 150px; }
  table { width: 100%; border-collapse: collapse; font-size: 13px; }
  th, td { text-align: left; padding: 4px; border-bottom: 1px solid #eef0f4; vertical-align: middle; }
  th { font-size: 12px; color: var(--muted); white-space: nowrap; }
  th button { border: 0; background: none; padding: 0; color: inherit; font-weight: 600; }
  th[aria-sort=ascending] button::after { content: " ▲"; } th[aria-sort=descending] button::after { content: " ▼"; }
  .num { text-align: right; }
  table.channels { table-layout: fixed; }
  table.channels th:nth-child(1) { width: 42%; } table.channels th:nth-child(2) { width: 28%; }
  table.channels th:nth-child(3) { width: 12%; } table.channels th:nth-child(4) { width: 18%; }
  .channels td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .channels tr[aria-current=true] { background: #e3edff; }
  .channels a { color: var(--ink); text-decoration: none; } .channels a:hover { text-decoration: underline; }
  .channels tr[aria-current=true] a { font-weight: 600; }
  .plat { display: inline-block; font-size: 10px; border-radius: 3px; padding: 0 4px; margin-right: 4px; color: #fff; background: #64748b; vertical-align: 1px; }
  .plat.slack { background: #611f69; } .plat.discord { background: #5865f2; } .plat.web { background: #0f766e; }
  .takebacks-badge { display: inline-block; font-size: 10px; border-radius: 3px; padding: 0 4px; margin-right: 4px; background: #fef3c7; color: #92400e; vertical-align: 1px; }
  .bar { position: relative; height: 14px; background: #e8ebf0; border-radius: 3px; overflow: hidden; }
  .bar i { position: absolute; inset: 0 auto 0 0; background: #3b82f6; }
  .bar span { position: relative; font-size: 11px; padding-left: 4px; line-height: 14px; }
  .none i { background: #60a5fa; } .background i, .fill.background { background: var(--background); }
  .aggressive i, .fill.aggressive { background: var(--aggressive); } .emergency i, .fill.emergency { background: var(--emergency); }
  .skeleton td { height: 22px; background: linear-gradient(90deg, #eef0f4, #f7f8fa, #eef0f4); }
  .pager { display: flex; gap: 8px; align-items: center; font-size: 12px; margin-top: 6px; }
  .open-web { margin-top: 10px; font-size: 12px; color: var(--muted); display: flex; gap: 6px; align-items: center; }
  .open-web input { font: inherit; padding: 2px 4px; }
  .gauge { position: relative; height: 22px; background: #e8ebf0; border-radius: 4px; overflow: hidden; margin: 4px 0 6px; }
  .gauge .fill { position: absolute; inset: 0 auto 0 0; width: 0; background: #3b82f6; transition: width .3s; }
  .gauge .mark { position: absolute; top: 0; bottom: 0; width: 2px; background: var(--ink); }
  .figure { font-size: 15px; font-weight: 600; margin: 0; }
  .columns { display: grid; grid-template-columns: minmax(0, 1.1fr) minmax(0, 1fr); gap: 14px; margin-top: 8px; }
  .block { margin-bottom: 14px; }
  .chart svg { width: 100%; height: auto; display: block; }
  .legend { list-style: none; padding: 0; margin: 4px 0 0; display: flex; flex-wrap: wrap; gap: 10px; font-size: 11px; color: var(--muted); }
  .sw { display: inline-block; width: 16px; height: 0; border-top: 2px solid var(--accent); vertical-align: middle; margin-right: 4px; }
  .sw.dash { border-top-style: dashed; } .sw.microcompact { border-color: var(--micro); } .sw.background { border-color: var(--background); }
  .sw.aggressive { border-color: var(--aggressive); } .sw.emergency { border-color: var(--emergency); }
  .sw.dot { width: 9px; height: 9px; border: 0; border-radius: 50%; background: var(--aggressive); }
  .tier { display: inline-block; font-size: 11px; border-radius: 3px; padding: 0 5px; color: #fff; }
  .tier.background { background: var(--background); } .tier.aggressive { background: var(--aggressive); }
  .tier.emergency { background: var(--emergency); } .tier.microcompact { background: var(--micro); }
  .scroll { overflow-x: auto; }
  table.passes { font-size: 12px; } table.passes td, table.passes th { white-space: nowrap; padding: 3px; }
  .covered-box { margin-top: 6px; } .covered-list { list-style: none; padding: 0; margin: 4px 0 0; background: #fff; }
  .covered-list > li { padding: 4px 6px; border-bottom: 1px solid #f0f2f5; }
  td.completed { color: var(--ok); } td.failed { color: var(--emergency); } td.stale, td.skipped { color: #a16207; }
  .memories { list-style: none; padding: 0; margin: 0; }
  .memories li { padding: 4px 0; border-bottom: 1px solid #f0f2f5; font-size: 13px; }
  .mtype { display: inline-block; min-width: 62px; text-align: center; font-size: 11px; border-radius: 3px; padding: 0 4px; margin-right: 6px; background: #e2e8f0; color: #334155; }
  .mtype.fact { background: #dbeafe; color: #1e40af; } .mtype.decision { background: #dcfce7; color: #166534; }
  .mtype.preference { background: #fce7f3; color: #9d174d; } .mtype.person { background: #fef3c7; color: #92400e; }
  .mtype.task { background: #ede9fe; color: #5b21b6; } .mtype.event { background: #e0f2fe; color: #075985; }
  .imp { float: right; margin-left: 8px; font-size: 11px; color: var(--muted); }
  details > summary { cursor: pointer; }
  table.suggestion { font-size: 12px; margin-bottom: 6px; } table.suggestion th[scope=row] { white-space: normal; font-weight: normal; }
  table.suggestion td { white-space: nowrap; } td.good { color: var(--ok); font-weight: 600; } td.bad { color: var(--emergency); font-weight: 600; }
  .lead { margin: 0 0 6px; padding-left: 6px; border-left: 3px solid var(--line); }
  .lead.good { border-left-color: var(--ok); } .lead.bad { border-left-color: var(--emergency); }
  .would { margin: 4px 0 6px; padding-left: 18px; font-size: 13px; }
  .paste { margin: 6px 0; }
  pre.toml { margin: 4px 0; padding: 6px 8px; background: #f8fafc; border: 1px solid var(--line); border-radius: 4px; font: 12px/1.5 ui-monospace, monospace; overflow-x: auto; }
  .copy { font-size: 12px; padding: 2px 10px; }
  .history { list-style: none; padding: 0; margin: 0; max-height: 640px; overflow-y: auto; border: 1px solid #eef0f4; border-radius: 4px; }
  .history > li { padding: 5px 8px; border-bottom: 1px solid #f0f2f5; font-size: 13px; word-break: break-word; }
  .history .meta { font-size: 11px; color: var(--muted); }
  .history .meta b { color: var(--ink); font-size: 12px; }
  .history .assistant .meta b { color: var(--accent); }
  .history .tool .meta b { color: #0f766e; }
  .history .text { white-space: pre-wrap; }
  .history li.covered { opacity: .6; border-left: 3px solid #cbd5e1; }
  .history li.covered.truncated { border-left-color: var(--emergency); }
  .history li.span { background: #f8fafc; border-left: 3px solid var(--accent); }
  .history li.span.truncated { border-left-color: var(--emergency); background: #fef2f2; }
  .history li.divider { font-size: 11px; color: var(--muted); text-align: center; background: #f1f5f9; }
  .span-text { white-space: pre-wrap; font-size: 12px; margin: 6px 0 2px; }
  .badge { display: inline-block; font-size: 10px; border-radius: 3px; padding: 0 4px; margin-left: 4px; background: #e2e8f0; color: #334155; }
  .badge.stub { background: #ede9fe; color: #5b21b6; }
  .stubbox { border: 1px dashed #c4b5fd; border-radius: 4px; padding: 3px 6px; margin-top: 3px; font-size: 12px; }
  .chat { display: flex; gap: 6px; margin-top: 8px; }
  .chat input { padding: 5px; font: inherit; } .chat input[name=text] { flex: 1; }
  .empty { padding: 8px 0 16px; color: var(--muted); font-size: 15px; }
  [hidden] { display: none !important; }
  @media (max-width: 1100px) { main, .columns { grid-template-columns: 1fr; } }
`;
