/**
 * Where the context may be cut. A tool call and its results are one unit for the model (an
 * assistant message with `tool_calls` must be followed by its `tool` results), so a cut never falls
 * between them. Results follow their call directly, so a cut before index `i` is safe exactly when
 * `raw[i]` is not a tool result.
 */
import type { ContextMessage } from './model.js';

/**
 * The nearest safe cut for keeping `raw[0..end)` on one side: moved forward over tool results while
 * that stays within `limit`, otherwise moved back before the call they answer. A call whose results
 * have not arrived yet (the newest message) is never cut after either.
 */
export function safeCut(raw: readonly ContextMessage[], end: number, limit: number): number {
  let cut = end;
  while (cut < limit && raw[cut]?.role === 'tool') cut++;
  if (isSafe(raw, cut)) return cut;
  cut = end;
  while (cut > 0 && !isSafe(raw, cut)) cut--;
  return cut;
}

function isSafe(raw: readonly ContextMessage[], cut: number): boolean {
  if (raw[cut]?.role === 'tool') return false;
  const before = raw[cut - 1];
  return !(cut === raw.length && before?.toolCalls !== undefined && before.toolCalls.length > 0);
}
