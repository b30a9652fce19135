/**
 * `npm run bench`: runs every benchmark and prints Markdown for BENCHMARKS.md. Times are medians on
 * a shared, noisy machine; compare the ratios, which are taken within one run.
 */
import { cpus } from 'node:os';
import { dashboardBench } from './dashboard.bench.js';
import { microcompactionBench } from './microcompaction.bench.js';
import { pacingBench } from './pacing.bench.js';
import { perTurnCheck } from './per-turn-check.bench.js';
import { pipelineBench } from './pipeline.bench.js';
import { promptCacheBench } from './prompt-cache.bench.js';
import { replicasBench } from './replicas.bench.js';
import { retentionBench } from './retention.bench.js';
import { searchHistoryBench } from './search-history.bench.js';
import { simulateBench } from './simulate.bench.js';
import { simulateArchiveBench } from './simulate-archive.bench.js';
import { startupBench } from './startup.bench.js';
import { tokenizerBench } from './tokenizer.bench.js';
import { turnBench } from './turn.bench.js';
import { turnTracingBench } from './turn-tracing.bench.js';
import { webGuardBench } from './web-guard.bench.js';

const only = process.argv[2];
const benches: [string, () => Promise<string>][] = [
  ['per-turn', perTurnCheck],
  ['tokenizer', tokenizerBench],
  ['simulate', simulateBench],
  ['simulate-archive', simulateArchiveBench],
  ['pacing', pacingBench],
  ['pipeline', pipelineBench],
  ['turn', () => turnBench(process.argv.slice(3))],
  ['turn-tracing', turnTracingBench],
  ['web-guard', webGuardBench],
  ['search-history', searchHistoryBench],
  ['microcompaction', microcompactionBench],
  ['dashboard', dashboardBench],
  ['startup', startupBench],
  ['prompt-cache', promptCacheBench],
  ['retention', () => retentionBench(process.argv.slice(3))],
  ['replicas', () => replicasBench(process.argv.slice(3))],
];

console.log(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${new Date().toISOString()}\n`,
);
for (const [name, bench] of benches) {
  if (only && only !== name) continue;
  console.log(`## ${name}\n`);
  console.log(await bench());
  console.log('');
}

// Connections (pg pools, Redis) may linger after the last bench; nothing is left to wait for.
process.exit(0);
