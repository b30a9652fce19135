/**
 * `ebb simulate` throughput. End to end: the real CLI on a 100,000-message synthetic transcript and
 * on the real 72,000-message one, wall clock (target: under 10 s for 100k). In process: the engine
 * against a baseline in the same run that only parses and tokenizes the same messages, so the ratio
 * is the cost of compaction itself on top of the work no replay can skip.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measureMessage, Simulation, systemPromptTokens, type TranscriptMessage } from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import {
  EBB_BIN,
  IRC_TRANSCRIPT,
  median,
  nowMs,
  shippedDefaults,
  syntheticMessages,
  table,
} from './support.js';

const RUNS = 3;

export async function simulateBench(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'ebb-bench-'));
  const synthetic = syntheticMessages(100_000);
  const syntheticFile = join(dir, 'synthetic-100k.jsonl');
  writeFileSync(syntheticFile, `${synthetic.map((m) => JSON.stringify(m)).join('\n')}\n`);
  const files: [string, string][] = [['synthetic, 100,000 messages', syntheticFile]];
  if (existsSync(IRC_TRANSCRIPT)) files.push(['irc-ubuntu, 72,010 messages (real)', IRC_TRANSCRIPT]);

  const cliRows: (string | number)[][] = [];
  for (const [name, file] of files) {
    const runs: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const start = nowMs();
      execFileSync(process.execPath, [EBB_BIN, 'simulate', file, '--json'], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      runs.push(nowMs() - start);
    }
    const s = median(runs) / 1000;
    cliRows.push([name, s.toFixed(2), Math.round(lineCount(file) / s).toLocaleString('en')]);
  }

  const engine = await engineVsBaseline(synthetic);
  return [
    `ebb simulate --json, wall clock including Node start-up (median of ${RUNS} runs)`,
    '',
    table(['transcript', 'seconds', 'messages/s'], cliRows),
    '',
    `In process on the 100k synthetic transcript: engine ${engine.engine.toFixed(0)} ms, baseline (tokenize every message only) ${engine.baseline.toFixed(0)} ms, ratio ${(engine.engine / engine.baseline).toFixed(2)}`,
  ].join('\n');
}

async function engineVsBaseline(messages: readonly TranscriptMessage[]) {
  const settings = await shippedDefaults();
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  const policy = settings.compaction;
  const engineRuns: number[] = [];
  const baselineRuns: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    let start = nowMs();
    let seq = 0;
    for (const m of messages) measureMessage({ ...m, seq: ++seq }, tokenizer, policy.messageMaxTokens);
    baselineRuns.push(nowMs() - start);

    start = nowMs();
    const sim = new Simulation({
      policy,
      contextWindow: settings.llm.contextWindow,
      maxOutputTokens: settings.llm.maxOutputTokens,
      reservedTokens:
        systemPromptTokens(tokenizer, settings.bot.systemPrompt) + settings.memory.recallMaxTokens,
      tokenizer,
      jobLatency: 2,
      emit: () => {},
    });
    for (const m of messages) sim.turn(m);
    sim.finish();
    engineRuns.push(nowMs() - start);
  }
  return { engine: median(engineRuns), baseline: median(baselineRuns) };
}

function lineCount(file: string): number {
  return Number(execFileSync('wc', ['-l', file], { encoding: 'utf8' }).trim().split(/\s+/)[0]);
}
