/**
 * Tokenizer throughput (gpt-tokenizer, o200k_base) and how far the chars/4 estimate is from the
 * real count on prose (real chat), code (this repo's TypeScript) and JSON tool output.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadTokenizer } from '@ebb/llm';
import { chatMessages, median, nowMs, ROOT, syntheticMessages, table } from './support.js';

export async function tokenizerBench(): Promise<string> {
  const tokenizer = await loadTokenizer('o200k_base');
  const { source, messages } = chatMessages();
  const prose = messages.map((m) => m.text);
  const code = sourceFiles(join(ROOT, 'packages')).map((f) => readFileSync(f, 'utf8'));
  const json = syntheticMessages(20_000, 3)
    .map((m) => m.text)
    .filter((t) => t.startsWith('{'));

  // Throughput: every chat message counted on its own, as at append.
  const bytes = prose.reduce((n, t) => n + Buffer.byteLength(t), 0);
  const runs: number[] = [];
  let tokens = 0;
  for (let r = 0; r < 5; r++) {
    const start = nowMs();
    tokens = 0;
    for (const t of prose) tokens += tokenizer.count(t);
    runs.push(nowMs() - start);
  }
  const ms = median(runs);
  const throughput = `Throughput on ${prose.length.toLocaleString('en')} messages of ${source}: ${(bytes / 1e6 / (ms / 1000)).toFixed(1)} MB/s, ${(tokens / 1e6 / (ms / 1000)).toFixed(2)} M tokens/s, ${((ms * 1000) / prose.length).toFixed(1)} µs per message (median of 5 runs)`;

  const rows = [
    errorRow('prose (chat messages)', prose, tokenizer.count),
    errorRow('code (repo TypeScript files)', code, tokenizer.count),
    errorRow('JSON tool output', json, tokenizer.count),
  ];
  return [
    throughput,
    '',
    'chars/4 against the real count (bias: Σ(chars/4) / Σ(real) − 1; per item: mean |error|)',
    '',
    table(['corpus', 'items', 'real tokens', 'chars/4 bias', 'per-item mean abs error'], rows),
  ].join('\n');
}

function errorRow(name: string, texts: readonly string[], count: (t: string) => number): (string | number)[] {
  let real = 0;
  let estimate = 0;
  let absError = 0;
  let n = 0;
  for (const t of texts) {
    const r = count(t);
    if (r === 0) continue;
    const e = t.length / 4;
    real += r;
    estimate += e;
    absError += Math.abs(e - r) / r;
    n++;
  }
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
  return [
    name,
    n.toLocaleString('en'),
    real.toLocaleString('en'),
    pct(estimate / real - 1),
    `${((absError / n) * 100).toFixed(1)}%`,
  ];
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}
