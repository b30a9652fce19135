/**
 * A small text chart of usage over a replay: one column per bucket of messages (the highest usage
 * in it), filled from the bottom, with the channel's three thresholds drawn across.
 */
export interface ChartThresholds {
  readonly background: number;
  readonly aggressive: number;
  readonly emergency: number;
}

export function usageChart(
  usage: readonly number[],
  thresholds: ChartThresholds,
  size: { width: number; height: number } = { width: 72, height: 20 },
): string {
  if (usage.length === 0) return '(no messages)';
  const width = Math.min(size.width, usage.length);
  const columns: number[] = [];
  for (let c = 0; c < width; c++) {
    const from = Math.floor((c * usage.length) / width);
    const to = Math.max(from + 1, Math.floor(((c + 1) * usage.length) / width));
    let max = 0;
    for (let i = from; i < to; i++) max = Math.max(max, usage[i] ?? 0);
    columns.push(max);
  }
  const top = Math.max(1, ...columns);
  // Row r holds usage in [r, r + 1) × top / height; a small epsilon keeps 0.80 out of the 0.75 row.
  const rowOf = (u: number) => Math.min(size.height - 1, Math.floor((u / top) * size.height + 1e-9));
  const lines: string[] = [];
  const marks = new Map<number, string>([
    [rowOf(thresholds.emergency), `emergency ${thresholds.emergency.toFixed(2)}`],
    [rowOf(thresholds.aggressive), `aggressive ${thresholds.aggressive.toFixed(2)}`],
    [rowOf(thresholds.background), `background ${thresholds.background.toFixed(2)}`],
  ]);
  for (let row = size.height - 1; row >= 0; row--) {
    const mark = marks.get(row);
    const cells = columns.map((u) => (rowOf(u) >= row && u > 0 ? '█' : mark ? '-' : ' ')).join('');
    const axis = (row / size.height) * top;
    lines.push(`${axis.toFixed(2).padStart(5)} │${cells}│ ${mark ?? ''}`.trimEnd());
  }
  lines.push(`      └${'─'.repeat(width)}┘`);
  lines.push(`       message 1 … ${usage.length}, ${Math.ceil(usage.length / width)} per column`);
  return lines.join('\n');
}
