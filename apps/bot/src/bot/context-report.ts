/** The text of `/context`: usage against the channel's three thresholds, tokens, last passes, memories. */
import type { ChannelStatus } from '../status/channel-status.js';

const BAR_WIDTH = 20;

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

/** The text of `/context` for a channel's status (see `channel-status.ts`), as the bot sees it now. */
export function contextReport(status: ChannelStatus, live: { readonly stubbedInContext: number }): string {
  const t = status.thresholds;
  const lines = [
    `Context of ${status.key}: ${usageBar(status.usage, [t.background, t.aggressive, t.emergency])} ${(status.usage * 100).toFixed(1)}%`,
    `thresholds: background ${pct(t.background)}, aggressive ${pct(t.aggressive)}, emergency ${pct(t.emergency)}`,
    `tokens: ${calibratedOf(status)} of ${status.tokens.budget} (${ourCount(status)}${status.messages.inContext} recent messages, ${live.stubbedInContext} of them stubbed tool results, ${status.spans.summaries} summaries, ${status.spans.truncations} pending cuts; ${status.messages.archived} messages archived)`,
    `memories in scope: ${status.memories.count}`,
  ];
  if (status.passes.length === 0) lines.push('no compaction passes yet');
  for (const pass of status.passes) {
    const tokens = pass.tokensBefore !== null ? `, ${pass.tokensBefore} → ${pass.tokensAfter} tokens` : '';
    const took = pass.durationMs !== null ? `, ${(pass.durationMs / 1000).toFixed(1)} s` : '';
    lines.push(
      `pass ${pass.tier} #${pass.fromSeq}–#${pass.toSeq}: ${pass.status}${pass.fallback ? ' (fallback)' : ''}${tokens}${took}`,
    );
  }
  return lines.join('\n');
}

/** The prompt's tokens as the provider counts them: the usage's terms, our count times the calibration learned from its replies. */
function calibratedOf({ tokens }: ChannelStatus): number {
  return Math.round((tokens.context + tokens.reserved) * tokens.calibration);
}

/** Our own count, when the calibration makes it differ. */
function ourCount({ tokens }: ChannelStatus): string {
  if (tokens.calibration === 1) return '';
  return `counted ${tokens.context + tokens.reserved} × calibration ${tokens.calibration.toFixed(2)}; `;
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
