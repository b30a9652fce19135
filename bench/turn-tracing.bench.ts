/**
 * What tracing costs a turn: the turn bench (`turn.bench.ts`) run in processes of its own, in
 * alternating rounds, once as Ebb runs with no `OTEL_*` variable (nothing of OpenTelemetry loaded)
 * and once traced as `ebb start` is with an endpoint set: the pg and ioredis instrumentations
 * registered before anything loads (as `bin/ebb.mjs` does), the SDK started, every span exported in
 * batches over OTLP/HTTP to a collector in another process (`otlp-sink.ts`). The ratios are traced /
 * untraced of the same round.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { median, table } from './support.js';

const ROUNDS = 2;
const RUN = fileURLToPath(new URL('./run.ts', import.meta.url));
const SINK = fileURLToPath(new URL('./otlp-sink.ts', import.meta.url));
const PRELOAD = fileURLToPath(new URL('../apps/bot/test/instrument-preload.ts', import.meta.url));

interface TurnFigures {
  readonly p50: number;
  readonly p99: number;
  readonly p50Large: number;
  readonly turnsPerSecond: number;
}

/** The first numbers of the turn bench's rows: `| 1k tokens | p50 | p99 |…`, `| 1,000 | turns/s |…`. */
function figures(output: string): TurnFigures {
  const cells = (label: string) => {
    const row = output.split('\n').find((line) => line.startsWith(`| ${label} `));
    if (row === undefined) throw new Error(`the turn bench printed no "${label}" row:\n${output}`);
    return row.split('|').map((c) => Number(c.trim().replaceAll(',', '')));
  };
  const small = cells('1k tokens');
  const large = cells('100k tokens');
  const many = cells('1,000');
  return {
    p50: small[2] ?? Number.NaN,
    p99: small[3] ?? Number.NaN,
    p50Large: large[2] ?? Number.NaN,
    turnsPerSecond: many[2] ?? Number.NaN,
  };
}

async function turnBenchIn(env: NodeJS.ProcessEnv, preload: readonly string[]): Promise<TurnFigures> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...preload, RUN, 'turn'], {
    env: { ...env, NODE_OPTIONS: '--conditions=ebb-source --expose-gc' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`the turn bench exited ${code}:\n${output}`);
  return figures(output);
}

async function startSink(): Promise<{ url: string; spans: () => number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SINK], {
    env: { ...process.env, NODE_OPTIONS: '--conditions=ebb-source' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let spans = 0;
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.startsWith('url ')) resolve(line.slice(4));
      if (line.startsWith('spans ')) spans = Number(line.slice(6));
    });
    child.once('exit', (code) => reject(new Error(`the OTLP sink exited ${code}`)));
  });
  return { url, spans: () => spans, child };
}

export async function turnTracingBench(): Promise<string> {
  const sink = await startSink();
  const untraced = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')),
  );
  const traced = { ...untraced, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url };
  const rows: (string | number)[][] = [];
  const ratios: { p50: number[]; p50Large: number[]; turnsPerSecond: number[] } = {
    p50: [],
    p50Large: [],
    turnsPerSecond: [],
  };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const off = await turnBenchIn(untraced, []);
      const before = sink.spans();
      const on = await turnBenchIn(traced, ['--import', PRELOAD]);
      // The sink reports every half second: wait for the last batch to be counted.
      await new Promise((r) => setTimeout(r, 1_000));
      for (const [name, f] of [
        ['untraced', off],
        ['traced', on],
      ] as const) {
        rows.push([
          round,
          name,
          f.p50.toFixed(2),
          f.p99.toFixed(2),
          f.p50Large.toFixed(2),
          Math.round(f.turnsPerSecond),
        ]);
      }
      rows.push([round, 'spans exported', '', '', '', sink.spans() - before]);
      ratios.p50.push(on.p50 / off.p50);
      ratios.p50Large.push(on.p50Large / off.p50Large);
      ratios.turnsPerSecond.push(on.turnsPerSecond / off.turnsPerSecond);
    }
  } finally {
    sink.child.kill();
  }
  return [
    `${ROUNDS} rounds, each the turn bench untraced then traced, in processes of their own.\n`,
    table(['round', 'run', '1k p50 ms', '1k p99 ms', '100k p50 ms', '1,000 channels turns/s'], rows),
    '',
    `Median traced / untraced: 1k p50 ${median(ratios.p50).toFixed(2)}, 100k p50 ${median(ratios.p50Large).toFixed(2)}, turns/s ${median(ratios.turnsPerSecond).toFixed(2)}.`,
  ].join('\n');
}
