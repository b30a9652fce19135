/**
 * How long the `ebb` command takes to start, from the build (what users run: `npm run build`, which
 * `npm install` runs) and from the sources through tsx (what the tests run, under the `source` export
 * condition). Each figure is the median of RUNS spawns after one warm-up, measured from spawn:
 *
 * - `ebb config check` until the process exits: on the repo's `config.toml`, which passes counted in
 *   bytes (no tokenizer loaded), and on a small window that only the model's tokenizer can pass
 *   (`SMALL_WINDOW`: 4,000 tokens, background at 0.70, the config check's own test case);
 * - `ebb dev` on the embedded database until its "Ebb is up" line (`bench/ebb-dev-ready.mjs`), on a
 *   fresh data directory (PGlite creates the cluster, then the migrations run) and on an existing one.
 *
 * The build is whatever `npm run build` last wrote: build before benchmarking.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EBB_BIN, median, nowMs, ROOT, table } from './support.js';

const RUNS = 5;
/** A config whose pass room the bytes bound refuses and the model's tokens allow. */
const SMALL_WINDOW =
  '[llm]\ncontext_window = 4000\nmax_output_tokens = 500\n[memory]\nrecall_max_tokens = 1000\n[compaction]\nbackground_threshold = 0.7\n';
const READY_SCRIPT = join(ROOT, 'bench/ebb-dev-ready.mjs');

type From = 'build' | 'sources';

/** The environment of a child that runs the build, or the sources (the tests' condition). */
function envFor(from: From): NodeJS.ProcessEnv {
  // `npm run bench` sets NODE_OPTIONS=--conditions=ebb-source for the benchmarks' own imports.
  return { ...process.env, NODE_OPTIONS: from === 'sources' ? '--conditions=ebb-source' : '' };
}

/** Median wall milliseconds of RUNS calls of `run` after one warm-up. */
function medianOf(run: () => number): number {
  run();
  return median(Array.from({ length: RUNS }, run));
}

function configCheckMs(from: From, config?: string): number {
  const started = nowMs();
  execFileSync(process.execPath, [EBB_BIN, 'config', 'check', ...(config ? ['--config', config] : [])], {
    env: envFor(from),
    stdio: 'ignore',
  });
  return nowMs() - started;
}

function devReadyMs(from: From, dataDir?: string): number {
  const out = execFileSync(process.execPath, [READY_SCRIPT, ...(dataDir ? ['--data-dir', dataDir] : [])], {
    env: envFor(from),
    encoding: 'utf8',
  });
  const ms = /ready_ms=(\d+)/.exec(out)?.[1];
  if (ms === undefined) throw new Error(`ebb-dev-ready.mjs printed no ready_ms: ${out}`);
  return Number(ms);
}

export async function startupBench(): Promise<string> {
  const rows: (string | number)[][] = [];
  for (const from of ['build', 'sources'] as const) {
    const existing = mkdtempSync(join(tmpdir(), 'ebb-startup-'));
    // Beside the data directory, which must be empty for its first start.
    const configs = mkdtempSync(join(tmpdir(), 'ebb-startup-config-'));
    const small = join(configs, 'small-window.toml');
    writeFileSync(small, SMALL_WINDOW);
    try {
      rows.push([
        from,
        Math.round(medianOf(() => configCheckMs(from))),
        Math.round(medianOf(() => configCheckMs(from, small))),
        Math.round(medianOf(() => devReadyMs(from))),
        // The warm-up run creates the data directory; the counted runs reopen it.
        Math.round(medianOf(() => devReadyMs(from, existing))),
      ]);
    } finally {
      rmSync(existing, { recursive: true, force: true });
      rmSync(configs, { recursive: true, force: true });
    }
  }
  return table(
    [
      'ebb from',
      'config check, ms',
      'config check, tokens counted, ms',
      'dev ready, fresh data dir, ms',
      'dev ready, existing data dir, ms',
    ],
    rows,
  );
}
