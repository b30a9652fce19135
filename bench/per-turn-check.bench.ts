/**
 * The per-turn monitor check (append the new message, compute usage, track the pace, decide) at 1k, 10k
 * and 100k messages of history. Ebb keeps totals incrementally, so the check must stay flat; the
 * baseline in the same run re-adds the history's (already counted) tokens every turn, as monitors
 * that re-estimate the whole history do, which grows with history.
 */

import type { ResolvedChannelConfig } from '@ebb/config';
import {
  CompactionMonitor,
  type ContextMessage,
  measureMessage,
  type SummarySpan,
  summarySpanBound,
  UNCALIBRATED,
  usageOf,
  WorkingContext,
} from '@ebb/core';
import { loadTokenizer } from '@ebb/llm';
import { chatMessages, median, nowMs, percentile, shippedDefaults, table } from './support.js';

const TURNS = 20_000;
const BATCH = 200;

export async function perTurnCheck(): Promise<string> {
  const settings = await shippedDefaults();
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  const summaryTokens = summarySpanBound(tokenizer, settings.compaction.summaryMaxTokens);
  const { source, messages } = chatMessages();
  // Count every message once, as Ebb does at append.
  const counted = messages.map(
    (m, i) => measureMessage({ ...m, seq: i + 1 }, tokenizer, settings.compaction.messageMaxTokens).entry,
  );
  const at = (i: number): ContextMessage => counted[i % counted.length] as ContextMessage;

  // Warm the JIT on both paths before measuring.
  timeTurns(1_000, at, 'ebb', settings, summaryTokens);
  timeTurns(1_000, at, 'baseline', settings, summaryTokens);
  const rows: (string | number)[][] = [];
  const results: { history: number; ebb: number; baseline: number }[] = [];
  for (const history of [1_000, 10_000, 100_000]) {
    const ebb = timeTurns(history, at, 'ebb', settings, summaryTokens);
    const baseline = timeTurns(history, at, 'baseline', settings, summaryTokens);
    results.push({ history, ebb: ebb.p50, baseline: baseline.p50 });
    rows.push([
      history.toLocaleString('en'),
      ebb.p50.toFixed(0),
      ebb.p99.toFixed(0),
      baseline.p50.toFixed(0),
      baseline.p99.toFixed(0),
    ]);
  }
  const first = results[0];
  const last = results.at(-1);
  const ratio = first && last ? (last.ebb / first.ebb).toFixed(2) : '?';
  const baseRatio = first && last ? (last.baseline / first.baseline).toFixed(1) : '?';
  return [
    `Per-turn monitor check (${source}; ${TURNS.toLocaleString('en')} turns per size, ns per turn over batches of ${BATCH})`,
    '',
    table(['history (messages)', 'Ebb p50 ns', 'Ebb p99 ns', 'baseline p50 ns', 'baseline p99 ns'], rows),
    '',
    `Ebb 100k/1k ratio (p50): ${ratio} (flat = 1.0); baseline (re-adds the history's counts every turn) 100k/1k ratio: ${baseRatio}`,
  ].join('\n');
}

function timeTurns(
  history: number,
  at: (i: number) => ContextMessage,
  mode: 'ebb' | 'baseline',
  settings: ResolvedChannelConfig,
  /** The largest summary span a pass writes (`summarySpanBound`): the monitor sizes passes with it. */
  summaryTokens: number,
) {
  const { compaction: policy, llm } = settings;
  // History 1..history: a summary of everything but the newest messages that fill half the budget.
  const raw: ContextMessage[] = [];
  let rawTokens = 0;
  for (let i = history - 1; i >= 0 && rawTokens < (llm.contextWindow - llm.maxOutputTokens) * 0.5; i--) {
    const m = { ...at(i), seq: i + 1 };
    raw.unshift(m);
    rawTokens += m.tokens;
  }
  const first = raw[0]?.seq ?? 1;
  const spans: SummarySpan[] =
    first > 1
      ? [
          {
            kind: 'summary',
            fromSeq: 1,
            toSeq: first - 1,
            text: '',
            tokens: 3_000,
            createdGeneration: 1,
            jobId: 'seed',
          },
        ]
      : [];
  const ctx = new WorkingContext({ generation: 1, spans, raw });
  const monitor = new CompactionMonitor();
  const historyTokens: number[] = [];
  for (let i = 0; i < history; i++) historyTokens.push(at(i).tokens);

  const usagePerToken = 1 / (llm.contextWindow - llm.maxOutputTokens);
  const running = {
    jobId: 'seed-pass',
    tier: 'background' as const,
    fromSeq: 1,
    toSeq: first,
    running: true,
  };
  const perTurn: number[] = [];
  let sink = 0;
  for (let b = 0; b < TURNS / BATCH; b++) {
    const start = nowMs();
    for (let t = 0; t < BATCH; t++) {
      const seq = ctx.headSeq + 1;
      const m = { ...at(seq - 1), seq };
      ctx.append(m);
      let contextTokens = ctx.tokens;
      if (mode === 'baseline') {
        // Re-adds a history of exactly `history` messages: the new message stands in for the oldest.
        historyTokens[seq % history] = m.tokens;
        contextTokens = 0;
        for (let i = 0; i < historyTokens.length; i++) contextTokens += historyTokens[i] ?? 0;
      }
      const usage = usageOf({
        contextTokens,
        reservedTokens: 1_000,
        contextWindow: llm.contextWindow,
        maxOutputTokens: llm.maxOutputTokens,
        calibration: UNCALIBRATED,
      });
      // What the compactor does every turn: observe the pace, and decide only when a pass may be due
      // (here with a pass of the whole prefix running, the most expensive case it meets).
      const turn = { context: ctx.view(), usage, usagePerToken, summaryTokens, now: seq * 1000 };
      monitor.observe(turn);
      if (monitor.needsQueue(policy, turn)) {
        const { action } = monitor.decide(policy, { ...turn, inFlight: [running] });
        sink += action.kind.length;
      }
    }
    perTurn.push(((nowMs() - start) * 1e6) / BATCH);
  }
  if (sink < 0) console.log(sink);
  const sorted = [...perTurn].sort((a, b) => a - b);
  return { p50: median(perTurn), p99: percentile(sorted, 0.99) };
}
