/**
 * The dashboard page: one HTML document with its CSS and plain JS (no build step, no framework).
 * It reads `GET /api/dashboard/channels`, listens to `GET /api/channels/:id/events` for the selected
 * web channel and posts the chat form to `POST /api/channels/:id/messages`. `%AUTH_NOTE%` is filled
 * in by `mountDashboard`.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ebb dashboard</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f6f9; }
  header { background: #1d2330; color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: baseline; }
  header small { color: #aab3c5; }
  header a { color: #9cc3ff; margin-left: auto; }
  main { display: grid; grid-template-columns: 260px 1fr 1fr; gap: 12px; padding: 12px; }
  section { background: #fff; border: 1px solid #dde2ea; border-radius: 6px; padding: 10px 12px; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5b6578; margin: 0 0 8px; }
  ul { list-style: none; padding: 0; margin: 0; }
  #channels li { padding: 4px 6px; border-radius: 4px; cursor: pointer; display: flex; justify-content: space-between; }
  #channels li.selected { background: #e3edff; font-weight: 600; }
  .gauge { position: relative; height: 22px; background: #e8ebf0; border-radius: 4px; overflow: hidden; margin: 18px 0 6px; }
  .gauge .fill { position: absolute; inset: 0 auto 0 0; background: #3b82f6; }
  .gauge .fill.background { background: #eab308; } .gauge .fill.aggressive { background: #f97316; } .gauge .fill.emergency { background: #dc2626; }
  .gauge .mark { position: absolute; top: 0; bottom: 0; width: 2px; background: #1d2330; }
  .marks { font-size: 11px; color: #5b6578; }
  table { width: 100%; border-collapse: collapse; font-size: 13px; }
  td, th { text-align: left; padding: 3px 4px; border-bottom: 1px solid #eef0f4; }
  .completed { color: #15803d; } .failed, td.emergency { color: #b91c1c; } .stale, .skipped { color: #a16207; }
  #messages { height: 320px; overflow-y: auto; font-size: 13px; }
  #messages li { padding: 3px 0; border-bottom: 1px solid #f0f2f5; word-break: break-word; }
  #messages li.assistant b { color: #2563eb; }
  form { display: flex; gap: 6px; margin-top: 8px; }
  form input[name=text] { flex: 1; } input { padding: 5px; }
  .note { font-size: 12px; color: #5b6578; }
</style>
</head>
<body>
<header><strong>Ebb</strong><small id="auth-note">%AUTH_NOTE%</small><a href="/admin/queues">queue board</a></header>
<main>
  <section><h2>Channels</h2><ul id="channels"></ul>
    <p class="note">Web channel: <input id="channel-id" size="12" aria-label="web channel id"></p></section>
  <section>
    <h2>Context of <span id="channel-key"></span></h2>
    <div class="gauge" id="gauge" role="meter" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0"><div class="fill" id="gauge-fill" style="width:0"></div></div>
    <div class="marks" id="gauge-marks"></div>
    <p id="usage">usage 0.0%</p>
    <p id="spans">0 summary spans</p>
    <h2>Memories</h2>
    <ul id="memories"><li class="note">none yet</li></ul>
    <h2>Passes</h2>
    <table><thead><tr><th>tier</th><th>tokens</th><th>duration</th><th>outcome</th></tr></thead><tbody id="timeline"></tbody></table>
  </section>
  <section>
    <h2>Chat</h2>
    <ul id="messages"></ul>
    <form id="chat"><input name="author" value="operator" size="8" aria-label="author"><input name="text" aria-label="message" autocomplete="off"><button>Send</button></form>
  </section>
</main>
<script>
(() => {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  let channelId = params.get('channel') || 'lobby';
  let stream;
  const passes = new Map();
  const pct = (x) => (x * 100).toFixed(1) + '%';
  const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };

  async function refresh() {
    const res = await fetch('/api/dashboard/channels', { credentials: 'same-origin' });
    if (!res.ok) return;
    const { channels } = await res.json();
    const list = $('channels'); list.replaceChildren();
    for (const ch of channels) {
      const li = el('li'); li.append(el('span', ch.key), el('span', pct(ch.usage)));
      if (ch.key === 'web:' + channelId) li.className = 'selected';
      if (ch.key.startsWith('web:')) li.onclick = () => select(ch.key.slice(4));
      list.append(li);
    }
    const current = channels.find((c) => c.key === 'web:' + channelId);
    if (current) show(current);
  }

  function show(ch) {
    const t = ch.thresholds;
    const fill = $('gauge-fill');
    fill.style.width = Math.min(100, ch.usage * 100) + '%';
    fill.className = 'fill ' + (ch.usage >= t.emergency ? 'emergency' : ch.usage >= t.aggressive ? 'aggressive' : ch.usage >= t.background ? 'background' : '');
    $('gauge').setAttribute('aria-valuenow', (ch.usage * 100).toFixed(1));
    const gauge = $('gauge'), marks = $('gauge-marks');
    gauge.querySelectorAll('.mark').forEach((m) => m.remove()); marks.replaceChildren();
    for (const [name, at] of Object.entries(t)) {
      const m = el('div', undefined, 'mark'); m.style.left = at * 100 + '%'; m.title = name; gauge.append(m);
    }
    marks.textContent = 'marks: ' + Object.entries(t).map(([name, at]) => name + ' ' + Math.round(at * 100) + '%').join(' · ');
    $('usage').textContent = 'usage ' + pct(ch.usage) + ': ' + (ch.tokens.context + ch.tokens.reserved) + ' of ' + ch.tokens.budget + ' tokens';
    $('spans').textContent = ch.spans.summaries + ' summary span' + (ch.spans.summaries === 1 ? '' : 's') + ' (' + ch.spans.summaryTokens + ' tokens), ' + ch.spans.truncations + ' truncations' + (ch.microcompaction ? ', ' + ch.microcompaction.stubbed + ' tool results stubbed (' + ch.microcompaction.tokensSaved + ' tokens saved)' : '');
    const memories = $('memories'); memories.replaceChildren();
    for (const m of ch.memories ?? []) memories.append(el('li', '(' + m.type + (m.speaker ? ', ' + m.speaker : '') + ') ' + m.text));
    if (memories.children.length === 0) memories.append(el('li', 'none yet', 'note'));
    for (const p of [...ch.passes].reverse()) if (!passes.has(p.jobId)) passes.set(p.jobId, p);
    drawTimeline();
  }

  function drawTimeline() {
    const body = $('timeline'); body.replaceChildren();
    for (const p of [...passes.values()].reverse()) {
      const tr = el('tr');
      const tokens = p.tokensBefore != null && p.tokensAfter != null ? p.tokensBefore + ' → ' + p.tokensAfter : '';
      tr.append(el('td', p.tier), el('td', tokens), el('td', p.durationMs != null ? (p.durationMs / 1000).toFixed(2) + ' s' : ''), el('td', p.status, p.status));
      body.append(tr);
    }
  }

  const OUTCOMES = { 'compaction.started': 'running', 'compaction.completed': 'completed', 'compaction.failed': 'failed', 'compaction.stale': 'stale', 'compaction.skipped': 'skipped', 'compaction.emergency': 'emergency', 'compaction.microcompacted': 'microcompacted' };
  let timer;
  const soon = () => { clearTimeout(timer); timer = setTimeout(refresh, 150); };

  function select(id) {
    channelId = id; $('channel-id').value = id; $('channel-key').textContent = 'web:' + id;
    passes.clear(); drawTimeline(); $('messages').replaceChildren();
    history.replaceState(null, '', '?channel=' + encodeURIComponent(id));
    if (stream) stream.close();
    stream = new EventSource('/api/channels/' + encodeURIComponent(id) + '/events');
    stream.addEventListener('message', (e) => {
      const m = JSON.parse(e.data);
      const li = el('li', undefined, m.role); li.append(el('b', m.author + ': '), document.createTextNode(m.text));
      $('messages').append(li); $('messages').scrollTop = 1e9; soon();
    });
    stream.addEventListener('compaction', (e) => {
      const ev = JSON.parse(e.data);
      const status = OUTCOMES[ev.event];
      if (status) {
        const id = ev.jobId || ev.event + ':' + Date.now();
        const prev = passes.get(id) || {};
        passes.set(id, { ...prev, jobId: id, tier: ev.tier, status, tokensBefore: ev.tokensBefore ?? prev.tokensBefore ?? null, tokensAfter: ev.tokensAfter ?? prev.tokensAfter ?? null, durationMs: ev.durationMs ?? prev.durationMs ?? null });
        drawTimeline();
      }
      soon();
    });
    refresh();
  }

  $('channel-id').onchange = (e) => { if (/^[A-Za-z0-9_.-]{1,100}$/.test(e.target.value)) select(e.target.value); };
  $('chat').onsubmit = async (e) => {
    e.preventDefault();
    const form = e.target, text = form.text.value;
    if (!text.trim()) return;
    form.text.value = '';
    await fetch('/api/channels/' + encodeURIComponent(channelId) + '/messages', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: form.author.value || 'operator', text }),
    });
    soon();
  };
  select(channelId);
  setInterval(refresh, 5000);
})();
</script>
</body>
</html>
`;
