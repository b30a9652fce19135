/**
 * Pacing: emergencies and peak usage against message rate × pass duration, from `ebb simulate` on
 * the first 20,000 messages of the real transcript (re-timed with `--rate`, passes lasting
 * `--job-seconds` of the transcript's clock) in a 32k window. Growth per pass is the share of the
 * window one pass's duration of traffic adds; when it passes the room between the background and
 * emergency thresholds (15%), one pass at a time cannot keep up and follow-ups run beside it.
 * Then the same on the real stack at 30 messages/s (`pacing-real-stack.ts`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pacingRealStackBench } from './pacing-real-stack.js';
import { EBB_BIN, IRC_TRANSCRIPT, table } from './support.js';

const RATES = [1, 5, 20, 50];
const PASS_SECONDS = [0.5, 2, 10];
const MESSAGES = 20_000;

interface Summary {
  readonly peakUsage: number;
  readonly tiers: { background: number; aggressive: number; emergency: number };
  readonly heals: number;
  readonly followUps: number;
  readonly escalations: number;
  readonly delayed: number;
  readonly summarizerInputTokens: number;
}

/** The simulated replay's table, then the real stack's (`pacing-real-stack.ts`). */
export async function pacingBench(): Promise<string> {
  return [await simulatedPacing(), '', await pacingRealStackBench()].join('\n');
}

async function simulatedPacing(): Promise<string> {
  if (!existsSync(IRC_TRANSCRIPT)) return `(skipped: ${IRC_TRANSCRIPT} is not there; set EBB_BENCH_DATA)`;
  const dir = mkdtempSync(join(tmpdir(), 'ebb-pacing-'));
  const config = join(dir, '32k.toml');
  writeFileSync(config, '[llm]\ncontext_window = 32000\n');
  const rows: (string | number)[][] = [];
  for (const rate of RATES) {
    for (const seconds of PASS_SECONDS) {
      const out = execFileSync(
        process.execPath,
        [
          EBB_BIN,
          'simulate',
          IRC_TRANSCRIPT,
          '--config',
          config,
          '--limit',
          String(MESSAGES),
          '--rate',
          String(rate),
          '--job-seconds',
          String(seconds),
          '--json',
        ],
        { maxBuffer: 1 << 30, encoding: 'utf8' },
      );
      const s = JSON.parse(out.trimEnd().split('\n').at(-1) ?? '{}') as Summary;
      rows.push([
        rate,
        seconds,
        s.tiers.emergency,
        s.peakUsage.toFixed(3),
        `${s.tiers.background} / ${s.tiers.aggressive} / ${s.heals}`,
        s.followUps,
        s.escalations,
        s.delayed,
        (s.summarizerInputTokens / 1000).toFixed(0),
      ]);
    }
  }
  return [
    `ebb simulate, first ${MESSAGES.toLocaleString('en')} messages of irc-ubuntu.jsonl, 32k window, shipped thresholds`,
    '',
    table(
      [
        'msg/s',
        'pass s',
        'emergencies',
        'peak usage',
        'passes bg / aggr / heals',
        'follow-ups',
        'escalations',
        'cooldown delays',
        'summarizer k tokens in',
      ],
      rows,
    ),
  ].join('\n');
}
