/**
 * The two writes compaction makes to a channel's prefix on Postgres, each in one transaction under
 * the channel row lock (`lockChannel`): a pass's summary spliced in place of what it covers, and an
 * emergency truncation. Both plan with the core's pure planners on what they find under the lock,
 * so a plan made on a stale view is refused there (`stale`), never applied; microcompaction, the third
 * write under the same lock, is `pg-microcompaction.ts`. `PgChannelStore` calls them as `ContextWriter`.
 */
import {
  type ChannelCounters,
  contextTotal,
  countersAfterSplice,
  countersAfterTruncation,
  planEmergencyTruncation,
  planSplice,
  type Span,
  type SpliceOutcome,
  type SummaryResult,
  TAKEN_BACK_REASON,
  type TruncationOutcome,
  type TruncationRequest,
  truncationIsStale,
} from '@ebb/core';
import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { activeSpans, lockChannel, retireSpans, spanRow, toSpan } from './pg-channel-rows.js';
import { takenBackSince } from './pg-take-back-log.js';
import { withoutNulls } from './rows.js';
import { channels, contextSpans, messages } from './schema.js';

/**
 * `ContextWriter.splice`: planned by `planSplice` on the locked channel row and its active spans,
 * after the take-back check; the spans the plan does not keep are retired, its new ones inserted.
 */
export function spliceSummary(
  db: EbbDatabase,
  channelKey: string,
  result: SummaryResult,
): Promise<SpliceOutcome> {
  return db.transaction(async (tx) => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel) return { kind: 'stale', reason: 'the channel has no messages' };
    // A take-back since the pass's snapshot over its range: what it read may hold the old text.
    if (
      result.takeBackMark !== undefined &&
      channel.takeBackMark > result.takeBackMark &&
      (await takenBackSince(tx, channelKey, result.takeBackMark, result)).length > 0
    )
      return { kind: 'stale', reason: TAKEN_BACK_REASON };
    const rows = await activeSpans(tx, channelKey);
    const spans = rows.map(toSpan);
    // The raw messages a splice through result.toSeq drops: planSplice refuses a summary larger
    // than what it would replace.
    const [dropped] = await tx
      .select({
        messages: sql<number>`count(*)`.mapWith(Number),
        tokens: sql<number>`coalesce(sum(${messages.contextTokens}), 0)`.mapWith(Number),
      })
      .from(messages)
      .where(
        and(
          eq(messages.channelKey, channelKey),
          gt(messages.seq, channel.prefixEnd),
          lte(messages.seq, result.toSeq),
        ),
      );
    const plan = planSplice(
      { generation: channel.generation, headSeq: channel.headSeq, spans },
      result,
      dropped?.tokens ?? 0,
    );
    if (plan.kind !== 'splice') return plan;

    const after = countersAfterSplice(channel, plan, dropped?.tokens ?? 0);
    const { generation, spanTokens, rawTokens } = after;
    // The plan passes untouched spans through as the same objects: every other span is replaced.
    const kept = new Set<Span>(plan.spans);
    const retired = rows.filter((_, i) => !kept.has(spans[i] as Span)).map((r) => r.id);
    const loaded = new Set<Span>(spans);
    const added = plan.spans.filter((s) => !loaded.has(s));
    await retireSpans(tx, retired, generation);
    if (added.length > 0) await tx.insert(contextSpans).values(added.map((s) => spanRow(channelKey, s)));

    await writeCounters(tx, channelKey, after);
    return {
      kind: 'splice',
      generation,
      tokensBefore: contextTotal(channel),
      tokensAfter: contextTotal({ spanTokens, rawTokens }),
      messagesRemoved: dropped?.messages ?? 0,
    };
  });
}

/**
 * `ContextWriter.truncate`: planned by `planEmergencyTruncation` on the locked channel row, its
 * active spans and its raw messages' seqs, tokens, roles and tool calls (never their text).
 */
export function truncateContext(
  db: EbbDatabase,
  channelKey: string,
  request: TruncationRequest,
): Promise<TruncationOutcome> {
  return db.transaction(async (tx): Promise<TruncationOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel) return { kind: 'nothing', reason: 'empty' };
    // Refused on the channel row alone: no spans or messages read under the lock for nothing.
    if (truncationIsStale(channel.generation, request)) return { kind: 'nothing', reason: 'stale' };
    const rows = await activeSpans(tx, channelKey);
    // The planner reads only seq, tokens, role and tool calls of the raw messages.
    const raw = await tx
      .select({
        seq: messages.seq,
        tokens: messages.contextTokens,
        role: messages.role,
        toolCalls: messages.toolCalls,
      })
      .from(messages)
      .where(and(eq(messages.channelKey, channelKey), gt(messages.seq, channel.prefixEnd)))
      .orderBy(asc(messages.seq));
    const tokensBefore = contextTotal(channel);
    const plan = planEmergencyTruncation({
      context: {
        generation: channel.generation,
        headSeq: channel.headSeq,
        spans: rows.map(toSpan),
        raw: raw.map((r) => ({ ...withoutNulls(r), author: '', text: '' })),
        tokens: tokensBefore,
      },
      ...request,
    });
    if (plan.kind === 'nothing') return plan;

    const last = rows.at(-1);
    const after = countersAfterTruncation(channel, plan, last?.tokens ?? 0);
    const { generation, spanTokens, rawTokens } = after;
    if (plan.extendsLast && last) await retireSpans(tx, [last.id], generation);
    await tx.insert(contextSpans).values(
      spanRow(channelKey, {
        kind: 'truncated',
        fromSeq: plan.fromSeq,
        toSeq: plan.toSeq,
        tokens: plan.markerTokens,
        createdGeneration: generation,
      }),
    );
    await writeCounters(tx, channelKey, after);
    return {
      kind: 'truncate',
      plan,
      generation,
      tokensBefore,
      tokensAfter: contextTotal({ spanTokens, rawTokens }),
    };
  });
}

/** The channel row's counters after a splice or a cut, written in `tx`, which holds the row's lock. */
async function writeCounters(tx: EbbDatabase, channelKey: string, after: ChannelCounters): Promise<void> {
  const { generation, prefixEnd, spanTokens, rawTokens } = after;
  await tx
    .update(channels)
    .set({ generation, prefixEnd, spanTokens, rawTokens, updatedAt: sql`now()` })
    .where(eq(channels.key, channelKey));
}
