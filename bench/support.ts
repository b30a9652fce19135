/** Shared pieces of the benchmarks: data loading, timing, percentiles, table printing. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type ResolvedChannelConfig, resolveChannel } from '@ebb/config';
import type { PlatformAdapter, PlatformHandlers, TranscriptMessage } from '@ebb/core';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const EBB_BIN = join(ROOT, 'apps/bot/bin/ebb.mjs');
/** The real 72,000-message transcript beside the repo (shared/data); EBB_BENCH_DATA overrides it. */
export const IRC_TRANSCRIPT = process.env.EBB_BENCH_DATA ?? join(ROOT, '../shared/data/irc-ubuntu.jsonl');

export function readJsonl(file: string): TranscriptMessage[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as TranscriptMessage);
}

/** Real chat when shared/data is there, otherwise the synthetic generator. */
export function chatMessages(): { source: string; messages: TranscriptMessage[] } {
  if (existsSync(IRC_TRANSCRIPT))
    return { source: 'irc-ubuntu.jsonl (real)', messages: readJsonl(IRC_TRANSCRIPT) };
  return { source: 'ebb transcript (synthetic)', messages: syntheticMessages(72_000) };
}

/** `ebb transcript`'s messages; `flags` such as `--tools` choose another transcript. */
export function syntheticMessages(n: number, seed = 1, flags: readonly string[] = []): TranscriptMessage[] {
  const out = execFileSync(
    process.execPath,
    [EBB_BIN, 'transcript', '--messages', String(n), '--seed', String(seed), ...flags],
    {
      maxBuffer: 1 << 30,
      encoding: 'utf8',
    },
  );
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as TranscriptMessage);
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
}

export function median(xs: readonly number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [
    line(cells[0] ?? []),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...cells.slice(1).map(line),
  ].join('\n');
}

/** The settings of the shipped config.toml for a channel with no overrides. */
export async function shippedDefaults(): Promise<ResolvedChannelConfig> {
  return resolveChannel(await loadConfig({ path: join(ROOT, 'config.toml') }), 'defaults');
}

/** A platform that posts nowhere: the bot's `send` and `typing` cost nothing to measure. */
export class NullPlatform implements PlatformAdapter {
  readonly platform = 'web' as const;
  #n = 0;
  handlers: PlatformHandlers | undefined;
  async start(handlers: PlatformHandlers) {
    this.handlers = handlers;
  }
  async send() {
    return { platformMessageId: `out-${++this.#n}` };
  }
  async typing() {}
  async stop() {}
}
