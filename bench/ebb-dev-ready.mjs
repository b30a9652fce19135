#!/usr/bin/env node
/**
 * One `ebb dev` on the embedded database (PGlite), from spawn to its "Ebb is up" log line, then
 * SIGTERM and wait for the exit. Prints `ready_ms=N` (spawn to the line). Plain JavaScript so it runs
 * beside any build and under any whole-process timer (`/usr/bin/time -v node bench/ebb-dev-ready.mjs`).
 *
 *   node bench/ebb-dev-ready.mjs                  a fresh data directory (created, then removed)
 *   node bench/ebb-dev-ready.mjs --data-dir DIR   DIR, created on the first run and reused after
 *
 * The repo's config.toml on a free web port (no clash with a running Ebb), a Redis prefix of
 * its own, no DATABASE_URL and no OPENAI_API_KEY: what `npm start` does on a fresh clone.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { 'data-dir': { type: 'string' } }, strict: true });

const scratch = mkdtempSync(join(tmpdir(), 'ebb-dev-ready-'));
const dataDir = values['data-dir'] ?? join(scratch, 'data');
mkdirSync(dataDir, { recursive: true });
const config = join(scratch, 'config.toml');
const port = await freePort();
writeFileSync(
  config,
  readFileSync(join(ROOT, 'config.toml'), 'utf8').replace(/^port = \d+$/m, `port = ${port}`),
);

const env = { ...process.env, EBB_DATA_DIR: dataDir, EBB_REDIS_PREFIX: `ebb-bench-${process.pid}` };
for (const name of ['DATABASE_URL', 'OPENAI_API_KEY', 'SLACK_BOT_TOKEN', 'DISCORD_TOKEN']) delete env[name];

const started = performance.now();
const child = spawn(process.execPath, [join(ROOT, 'apps/bot/bin/ebb.mjs'), 'dev', '--config', config], {
  stdio: ['ignore', 'pipe', 'pipe'],
  env,
});
let output = '';
child.stderr.on('data', (chunk) => {
  output += chunk;
});
const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
const readyMs = await new Promise((resolve, reject) => {
  createInterface({ input: child.stdout }).on('line', (line) => {
    output += `${line}\n`;
    if (line.includes('Ebb is up')) resolve(performance.now() - started);
  });
  void exited.then((code) => reject(new Error(`ebb dev exited (${code}) before it was up:\n${output}`)));
});
child.kill('SIGTERM');
await exited;
rmSync(scratch, { recursive: true, force: true });
console.log(`ready_ms=${Math.round(readyMs)}`);

/** A port nothing listens on now (the config refuses 0). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
