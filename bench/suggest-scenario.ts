/**
 * docs/simulate.md's "Tuning thresholds" walk-through, end to end on the real stack: `ebb dev` (bot and
 * worker, Postgres, Redis) with its summarizer on a fake OpenAI server that takes seconds per pass
 * as a real one does (replies answer at once), the #ubuntu IRC transcript posted through the web API
 * in bursts (at up to RATE a second, then a pause), then `ebb simulate --from-archive --suggest` on the channel,
 * `ebb config check` on the file with the suggested block, and the replay with it.
 *
 *   NODE_OPTIONS=--conditions=ebb-source npx tsx bench/suggest-scenario.ts
 *   EBB_SCENARIO_MESSAGES=3000 EBB_SCENARIO_BURST=600 EBB_SCENARIO_PAUSE_S=20 EBB_SCENARIO_PASS_S=5 \
 *     EBB_SCENARIO_WINDOW=16000 NODE_OPTIONS=--conditions=ebb-source npx tsx bench/suggest-scenario.ts
 *
 * Prints each command and its output; the schema (`EBB_SCENARIO_SCHEMA`, default a new one) is kept
 * so the commands can be run again by hand with the DATABASE_URL it prints.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDb } from '@ebb/db';
import { testDatabaseUrl } from '@ebb/db/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { sql } from 'drizzle-orm';
import { EBB_BIN, IRC_TRANSCRIPT, ROOT, readJsonl } from './support.js';

const MESSAGES = Number(process.env.EBB_SCENARIO_MESSAGES ?? 3_000);
const BURST = Number(process.env.EBB_SCENARIO_BURST ?? 600);
/** Messages a second within a burst (at most what the bot answers). */
const RATE = Number(process.env.EBB_SCENARIO_RATE ?? 40);
const PAUSE_S = Number(process.env.EBB_SCENARIO_PAUSE_S ?? 20);
const PASS_S = Number(process.env.EBB_SCENARIO_PASS_S ?? 5);
/** How long the passes still running after the last message may take before the scenario gives up. */
const PASSES_WAIT_S = Number(process.env.EBB_SCENARIO_PASSES_WAIT_S ?? 600);
const WINDOW = Number(process.env.EBB_SCENARIO_WINDOW ?? 16_000);
const PORT = Number(process.env.EBB_SCENARIO_PORT ?? 3_927);
const SCHEMA = process.env.EBB_SCENARIO_SCHEMA ?? `ebb_scenario_${Date.now().toString(36)}`;
const CHANNEL = 'irc';
const KEY = `web:${CHANNEL}`;
const SUMMARIZER = 'gpt-5.4-nano';

const fake = await FakeOpenAiServer.start({
  latencyMs: (request) => (request.body.model === SUMMARIZER ? PASS_S * 1000 : 0),
  keepRequests: 10,
});
const dir = mkdtempSync(join(tmpdir(), 'ebb-scenario-'));
const config = join(dir, 'config.toml');
writeFileSync(
  config,
  `[llm]
model = "gpt-5.4-mini"
base_url = "${fake.url}"
context_window = ${WINDOW}
max_output_tokens = 1000

[compaction]
summarizer_model = "${SUMMARIZER}"

[web]
port = ${PORT}
rate_limit_per_minute = 0

[prices."gpt-5.4-mini"]
input_per_mtok = 0.75
cached_input_per_mtok = 0.075
output_per_mtok = 4.50

[prices."${SUMMARIZER}"]
input_per_mtok = 0.20
cached_input_per_mtok = 0.02
output_per_mtok = 1.25
`,
);

const base = testDatabaseUrl();
const admin = await createDb({ databaseUrl: base, poolSize: 1 });
const query = async (text: string) =>
  (await admin.db.execute(sql.raw(text))).rows as Record<string, unknown>[];
await query(`create schema if not exists ${SCHEMA}`);
const url = new URL(base);
url.searchParams.set('options', `-c search_path=${SCHEMA}`);
const env = {
  ...process.env,
  DATABASE_URL: url.toString(),
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  EBB_REDIS_PREFIX: `ebb-scenario-${process.pid}`,
  OPENAI_API_KEY: 'sk-scenario',
  EBB_DATA_DIR: dir,
  LOG_LEVEL: 'warn',
  NODE_OPTIONS: '--conditions=ebb-source',
};
const ebb = (args: string[]) => {
  console.log(`$ npx ebb ${args.join(' ')}`);
  try {
    const out = execFileSync(process.execPath, [EBB_BIN, ...args], { env, cwd: ROOT, encoding: 'utf8' });
    console.log(out);
    return { code: 0, out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    console.log(e.stdout, e.stderr);
    return { code: e.status, out: e.stdout };
  }
};

ebb(['migrate']);
const log = openSync(join(dir, 'ebb-dev.log'), 'w');
const bot: ChildProcess = spawn(process.execPath, [EBB_BIN, 'dev', '--config', config], {
  env,
  cwd: ROOT,
  stdio: ['ignore', log, log],
});
try {
  const api = `http://127.0.0.1:${PORT}`;
  for (let i = 0; ; i++) {
    const ok = await fetch(`${api}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 600) throw new Error(`ebb dev did not start: see ${join(dir, 'ebb-dev.log')}`);
    await sleep(100);
  }
  const messages = readJsonl(IRC_TRANSCRIPT)
    .filter((m) => m.role === 'user')
    .slice(0, MESSAGES);
  const started = performance.now();
  let burstStart = started;
  for (const [i, m] of messages.entries()) {
    if (i > 0 && i % BURST === 0) {
      await sleep(PAUSE_S * 1000);
      burstStart = performance.now();
    }
    const due = burstStart + ((i % BURST) * 1000) / RATE - performance.now();
    if (due > 0) await sleep(due);
    const response = await fetch(`${api}/api/channels/${CHANNEL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: m.author, text: m.text, id: `irc-${i}` }),
    });
    if (!response.ok) throw new Error(`message ${i}: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  }
  const seconds = (performance.now() - started) / 1000;
  const bursts = Math.ceil(messages.length / BURST);
  console.log(
    `posted ${messages.length} messages to ${KEY} in bursts of ${BURST} at up to ${RATE}/s (then ${PAUSE_S} s quiet): ${seconds.toFixed(0)} s, ${(messages.length / (seconds - (bursts - 1) * PAUSE_S)).toFixed(1)} messages/s in a burst`,
  );
  // Passes still running finish before the bot stops; one that never does (a lost job, a hung
  // provider) stops the scenario with what was left rather than holding it for ever.
  const passesDue = performance.now() + PASSES_WAIT_S * 1000;
  for (;;) {
    const [running] = await query(
      `select count(*)::int as n from ${SCHEMA}.compaction_runs where status in ('queued', 'running')`,
    );
    if (running?.n === 0) break;
    if (performance.now() > passesDue)
      throw new Error(
        `${running?.n} passes still queued or running ${PASSES_WAIT_S} s after the last message`,
      );
    await sleep(500);
  }
} finally {
  // A bot that already exited (it failed to start, say) has no exit left to wait for.
  if (bot.exitCode === null && bot.signalCode === null) {
    bot.kill('SIGTERM');
    await new Promise((resolve) => bot.once('exit', resolve));
  }
  await fake.close();
}
const rows = await query(
  `select status, tier, count(*)::int as n from ${SCHEMA}.compaction_runs group by 1, 2 order by 1, 2`,
);
console.log('recorded passes:', rows.map((r) => `${r.status} ${r.tier} ${r.n}`).join(', '));
await admin.close();

console.log(`DATABASE_URL='${env.DATABASE_URL}'  config: ${config}\n`);
ebb(['simulate', '--from-archive', KEY, '--config', config]);
const suggested = ebb(['simulate', '--from-archive', KEY, '--config', config, '--suggest']);
const block = suggested.out.slice(suggested.out.indexOf('\n[channels.') + 1);
if (block.startsWith('[channels.')) {
  const tuned = join(dir, 'tuned.toml');
  execFileSync('sh', [
    '-c',
    `cat "${config}" > "${tuned}" && printf '\\n%s\\n' "$1" >> "${tuned}"`,
    'sh',
    block.trim(),
  ]);
  ebb(['config', 'check', '--config', tuned, '--channel', KEY]);
  ebb(['simulate', '--from-archive', KEY, '--config', tuned]);
}
