/**
 * The emergency brake. When usage crosses the emergency threshold the bot cannot wait for a
 * summary: the oldest raw messages, `fraction` of the context by tokens, leave the context now and
 * a truncation marker takes their place. Nothing waits on a job in flight: a job that later finishes
 * over part of the range trims the marker (see `planSplice`). The range is named so a pass can heal
 * it with a real summary from the archive.
 */
import type { TruncationPlan } from '../model/context-writes.js';
import type { ContextView } from '../model/model.js';
import { prefixEnd } from '../model/model.js';
import { safeCut } from '../model/tool-pairs.js';

export type TruncationPlanResult =
  | TruncationPlan
  /**
   * `stale`: the channel moved past `expectedGeneration` (a splice landed): decide again on the new
   * state (see `truncationIsStale`).
   */
  | { readonly kind: 'nothing'; readonly reason: 'empty' | 'all_protected' | 'stale' };

export interface PlanTruncationInput {
  readonly context: ContextView;
  readonly fraction: number;
  readonly protectRecent: number;
  readonly markerTokens: number;
  /**
   * The generation the cut was decided on (a store's truncation, `TruncationRequest`): when the
   * context has moved on (a splice landed), nothing is cut, and the caller decides again.
   */
  readonly expectedGeneration?: number;
}

/**
 * Whether a truncation decided on `expectedGeneration` is refused on a channel at `generation`: the
 * channel moved on. Judged before anything else, so a store can refuse right after taking the lock,
 * before it reads any span or message.
 */
export function truncationIsStale(
  generation: number,
  request: Pick<PlanTruncationInput, 'expectedGeneration'>,
): boolean {
  return request.expectedGeneration !== undefined && request.expectedGeneration !== generation;
}

export function planEmergencyTruncation(input: PlanTruncationInput): TruncationPlanResult {
  const { context } = input;
  const { raw, spans } = context;
  if (truncationIsStale(context.generation, input)) return { kind: 'nothing', reason: 'stale' };
  if (raw.length === 0) return { kind: 'nothing', reason: 'empty' };
  const limit = Math.max(0, raw.length - input.protectRecent);
  const target = input.fraction * context.tokens;
  let dropped = 0;
  let end = 0;
  while (end < limit && dropped < target) {
    dropped += raw[end]?.tokens ?? 0;
    end++;
  }
  const cut = safeCut(raw, end, limit);
  if (cut === 0) return { kind: 'nothing', reason: 'all_protected' };

  let droppedTokens = 0;
  for (let i = 0; i < cut; i++) droppedTokens += raw[i]?.tokens ?? 0;
  const last = spans.at(-1);
  const extendsLast = last?.kind === 'truncated';
  return {
    kind: 'truncate',
    generation: context.generation,
    fromSeq: extendsLast ? last.fromSeq : prefixEnd(spans) + 1,
    toSeq: raw[cut - 1]?.seq ?? 0,
    extendsLast,
    droppedMessages: cut,
    droppedTokens,
    markerTokens: input.markerTokens,
  };
}
