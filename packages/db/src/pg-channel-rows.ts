/**
 * The channel row and its spans as the Postgres stores read and write them, inside the caller's
 * transaction: the lock (`FOR UPDATE` on the channel row), the active spans, retiring spans, the
 * mapping between span rows and the core's spans, and a message's context copy as its columns.
 */
import type { ChannelCounters, ContextCopy, SeqRange, Span } from '@ebb/core';
import { type AnyColumn, and, asc, eq, gte, inArray, lte, or, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { channels, contextSpans, type messages } from './schema.js';

export type SpanRow = typeof contextSpans.$inferSelect;

/** The channel row's counters: what the core's write planners plan on. */
export const channelColumns = {
  generation: channels.generation,
  headSeq: channels.headSeq,
  prefixEnd: channels.prefixEnd,
  spanTokens: channels.spanTokens,
  rawTokens: channels.rawTokens,
};

export async function lockChannel(
  tx: EbbDatabase,
  channelKey: string,
): Promise<(ChannelCounters & { readonly takeBackMark: number }) | undefined> {
  const [row] = await tx
    .select({ ...channelColumns, takeBackMark: channels.takeBackMark })
    .from(channels)
    .where(eq(channels.key, channelKey))
    .for('update');
  return row;
}

/** The channel row and its active spans, read in the caller's transaction (one snapshot). */
export async function readPrefix(tx: EbbDatabase, channelKey: string) {
  const [channel] = await tx.select(channelColumns).from(channels).where(eq(channels.key, channelKey));
  if (!channel) return undefined;
  return { channel, spans: await activeSpans(tx, channelKey) };
}

export function activeSpans(tx: EbbDatabase, channelKey: string): Promise<SpanRow[]> {
  // `active` as a bare column (not `= $1`) so the planner can use the partial index.
  return tx
    .select()
    .from(contextSpans)
    .where(and(eq(contextSpans.channelKey, channelKey), sql`${contextSpans.active}`))
    .orderBy(asc(contextSpans.fromSeq));
}

export async function retireSpans(
  tx: EbbDatabase,
  ids: readonly number[],
  generation: number,
): Promise<void> {
  if (ids.length === 0) return;
  await tx
    .update(contextSpans)
    .set({ active: false, retiredGeneration: generation })
    .where(inArray(contextSpans.id, [...ids]));
}

/** A span row's fields the core's span holds (a row read whole, or built by a query as JSON). */
export type SpanFields = Pick<
  SpanRow,
  'kind' | 'fromSeq' | 'toSeq' | 'text' | 'tokens' | 'createdGeneration' | 'jobId'
>;

export function toSpan(row: SpanFields): Span {
  const { fromSeq, toSeq, tokens, createdGeneration } = row;
  return row.kind === 'summary'
    ? {
        kind: 'summary',
        fromSeq,
        toSeq,
        text: row.text ?? '',
        tokens,
        createdGeneration,
        jobId: row.jobId ?? '',
      }
    : { kind: 'truncated', fromSeq, toSeq, tokens, createdGeneration };
}

export function spanRow(channelKey: string, span: Span): typeof contextSpans.$inferInsert {
  return {
    channelKey,
    fromSeq: span.fromSeq,
    toSeq: span.toSeq,
    kind: span.kind,
    text: span.kind === 'summary' ? span.text : null,
    tokens: span.tokens,
    createdGeneration: span.createdGeneration,
    jobId: span.kind === 'summary' ? span.jobId : null,
  };
}

/** A message's context copy as its columns (`loadChannel` reads it back: its own text, else the archive's). */
export function copyColumns(
  copy: ContextCopy,
): Pick<typeof messages.$inferInsert, 'contextContent' | 'contextTokens' | 'omittedTokens' | 'stubbed'> {
  return {
    contextContent: copy.text ?? null,
    contextTokens: copy.tokens,
    omittedTokens: copy.omittedTokens ?? null,
    stubbed: copy.stubbed === true,
  };
}

/** Rows whose `from..to` columns overlap any of `ranges` (SQL for `overlapsAny`). */
export function overlapping(from: AnyColumn, to: AnyColumn, ranges: readonly SeqRange[]): SQL | undefined {
  return or(...ranges.map((r) => and(lte(from, r.toSeq), gte(to, r.fromSeq))));
}
