/**
 * The dashboard page: one HTML document with its CSS and its script inlined (no framework; the
 * script is the TypeScript in `browser/`, bundled by `dashboard-bundle.ts`). It reads the `/api/dashboard/*` routes of `dashboard.ts` (shapes in `dashboard-api.ts`), listens
 * to `/api/dashboard/events` for every channel, and posts a web channel's chat form to
 * `POST /api/channels/:id/messages`.
 *
 * Views: the channel list (filter, platform, sortable columns, 50 rows a page, busiest first), and
 * for the selected channel its gauge, usage over time (inline SVG: a line, the thresholds, a mark
 * per pass in its tier's colour), its history (the archive's last messages with the summary spans,
 * truncation markers and microcompaction stubs where they sit, older pages on demand), the
 * take-backs (deletions, edits, forgets) still being completed, its passes,
 * its top memories and its suggested settings (read-only: `ebb simulate --suggest`'s table and block,
 * computed by the server in seconds, so the panel says so meanwhile). Every view has a loading and an
 * empty state; updates are announced in one polite live region.
 */

import { DASHBOARD_STYLE } from './dashboard-style.js';

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** The page, with `script` (the bundle of `browser/`) inlined. */
export function dashboardPage(authNote: string, script: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Ebb dashboard</title>
<style>${DASHBOARD_STYLE}</style>
</head>
<body>
<a class="skip" href="#channel-title">Skip to the channel</a>
<header>
  <strong>Ebb</strong><small id="auth-note">${escapeHtml(authNote)}</small>
  <span id="stream-state" class="stream" role="status">connecting…</span>
  <a href="/admin/queues">queue board</a>
</header>
<div id="announcer" class="sr-only" aria-live="polite" aria-atomic="false"></div>
<main>
  <section id="list-panel" class="panel" aria-labelledby="list-title">
    <h2 id="list-title">Channels <span id="channel-count" class="count"></span></h2>
    <div class="controls">
      <label>Filter <input id="filter" type="search" placeholder="key contains…" autocomplete="off"></label>
      <label>Platform <select id="platform"><option value="">all</option><option>slack</option><option>discord</option><option>web</option></select></label>
    </div>
    <table class="channels" aria-describedby="list-status">
      <caption class="sr-only">Channels, sortable by each column</caption>
      <thead><tr>
        <th scope="col" data-sort="key"><button type="button">Channel</button></th>
        <th scope="col" data-sort="usage" aria-sort="descending"><button type="button">Usage</button></th>
        <th scope="col" data-sort="messages" class="num"><button type="button">Msgs</button></th>
        <th scope="col" data-sort="lastActiveAt"><button type="button">Active</button></th>
      </tr></thead>
      <tbody id="channels" aria-busy="true">
        <tr class="skeleton"><td colspan="4"></td></tr><tr class="skeleton"><td colspan="4"></td></tr><tr class="skeleton"><td colspan="4"></td></tr>
      </tbody>
    </table>
    <p id="list-status" class="note" role="status">Loading channels…</p>
    <nav class="pager" aria-label="Channel pages">
      <button type="button" id="prev" disabled>Previous</button>
      <span id="page-info"></span>
      <button type="button" id="next" disabled>Next</button>
    </nav>
    <form id="open-web" class="open-web">
      <label>Open a web channel <input name="channel" size="12" placeholder="id" pattern="[A-Za-z0-9_.\\-]{1,100}" required></label>
      <button>Open</button>
    </form>
  </section>

  <section id="channel-panel" class="panel detail" aria-labelledby="channel-title" aria-busy="true">
    <h2 id="channel-title" tabindex="-1">Loading…</h2>
    <div id="empty-channel" class="empty" hidden></div>
    <div id="channel-body">
      <div class="overview">
        <div class="gauge" id="gauge" role="meter" aria-labelledby="usage-label" aria-valuemin="0" aria-valuemax="100">
          <div class="fill" id="gauge-fill"></div>
        </div>
        <p id="usage-label" class="figure"><span id="usage">usage —</span></p>
        <p id="tokens" class="note">tokens —</p>
        <p id="spans" class="note">spans —</p>
        <p id="take-backs" class="note" hidden></p>
        <p id="cost" class="note">last 24 hours —</p>
        <p id="budget" class="note" hidden></p>
      </div>
      <div class="columns">
        <div class="col">
          <section aria-labelledby="chart-title" class="block">
            <h3 id="chart-title">Usage over time</h3>
            <div id="chart" class="chart"><p class="note">Loading usage…</p></div>
            <ul class="legend" aria-label="Chart legend">
              <li><i class="sw line"></i>usage</li><li><i class="sw dash microcompact"></i>microcompact</li><li><i class="sw dash background"></i>background</li><li><i class="sw dash aggressive"></i>aggressive</li><li><i class="sw dash emergency"></i>emergency</li><li><i class="sw dot"></i>pass (tier colour)</li>
            </ul>
          </section>
          <section aria-labelledby="passes-title" class="block">
            <h3 id="passes-title">Passes</h3>
            <div id="passes"><p class="note">Loading passes…</p></div>
          </section>
          <section aria-labelledby="memories-title" class="block">
            <h3 id="memories-title">Memories</h3>
            <div id="memories"><p class="note">Loading memories…</p></div>
          </section>
          <section aria-labelledby="suggestion-title" class="block">
            <h3 id="suggestion-title">Suggested settings</h3>
            <div id="suggestion" aria-busy="true"><p class="note">Loading…</p></div>
          </section>
        </div>
        <div class="col">
          <section aria-labelledby="history-title" class="block history-block">
            <h3 id="history-title">History</h3>
            <p id="history-note" class="note"></p>
            <button type="button" id="older" hidden>Load older messages</button>
            <ol id="history" class="history" aria-busy="true"><li class="note">Loading history…</li></ol>
            <form id="chat" class="chat" hidden>
              <label class="sr-only" for="chat-author">Author</label><input id="chat-author" name="author" value="operator" size="8">
              <label class="sr-only" for="chat-text">Message</label><input id="chat-text" name="text" autocomplete="off" placeholder="Message this web channel">
              <button>Send</button>
            </form>
          </section>
        </div>
      </div>
    </div>
  </section>
</main>
<script>${script}</script>
</body>
</html>
`;
}
