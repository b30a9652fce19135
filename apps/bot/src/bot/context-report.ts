/** The text of `/context`: usage against the channel's three thresholds, tokens, last passes, memories. */
import type { ResolvedChannelConfig } from '@ebb/config';
import type { CompactionRun, ContextView } from '@ebb/core';

const BAR_WIDTH = 20;

export interface ContextReportInput {
  readonly key: string;
  readonly usage: number;
  readonly settings: ResolvedChannelConfig;
  readonly context: ContextView;
  readonly runs: readonly CompactionRun[];
  readonly memories: number;
  readonly reservedTokens: number;
}

/** `▕██████████▒▒······│··│·│▏`: filled to usage, marks at the three thresholds. */
export function usageBar(usage: number, marks: readonly number[]): string {
  const filled = Math.round(Math.min(1, usage) * BAR_WIDTH);
  const cells: string[] = Array.from({ length: BAR_WIDTH }, (_, i) => (i < filled ? '█' : '·'));
  for (const mark of marks) {
    const at = Math.min(BAR_WIDTH - 1, Math.floor(mark * BAR_WIDTH));
    if (at >= filled) cells[at] = '│';
  }
  return `▕${cells.join('')}▏`;
}

export function contextReport(input: ContextReportInput): string {
  const c = input.settings.compaction;
  const budget = input.settings.llm.contextWindow - input.settings.llm.maxOutputTokens;
  const summaries = input.context.spans.filter((s) => s.kind === 'summary').length;
  const truncated = input.context.spans.filter((s) => s.kind === 'truncated').length;
  const lines = [
    `Context of ${input.key}: ${usageBar(input.usage, [c.backgroundThreshold, c.aggressiveThreshold, c.emergencyThreshold])} ${(input.usage * 100).toFixed(1)}%`,
    `thresholds: background ${pct(c.backgroundThreshold)}, aggressive ${pct(c.aggressiveThreshold)}, emergency ${pct(c.emergencyThreshold)}`,
    `tokens: ${input.context.tokens + input.reservedTokens} of ${budget} (${input.context.raw.length} recent messages, ${summaries} summaries, ${truncated} pending cuts; ${input.context.headSeq} messages archived)`,
    `memories in scope: ${input.memories}`,
  ];
  if (input.runs.length === 0) lines.push('no compaction passes yet');
  for (const run of input.runs) {
    const tokens = run.tokensBefore !== undefined ? `, ${run.tokensBefore} → ${run.tokensAfter} tokens` : '';
    const took = run.durationMs !== undefined ? `, ${(run.durationMs / 1000).toFixed(1)} s` : '';
    lines.push(
      `pass ${run.tier} #${run.fromSeq}–#${run.toSeq}: ${run.status}${run.fallback ? ' (fallback)' : ''}${tokens}${took}`,
    );
  }
  return lines.join('\n');
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
