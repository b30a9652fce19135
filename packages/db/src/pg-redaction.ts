/**
 * What forgetting needs of the channel store on Postgres (`ebb forget`, and a deletion or an edit on
 * a platform): finding the messages to redact, replacing a summary span with one written again,
 * tombstoning or editing archived messages and blanking retired spans. Replacing a span,
 * tombstoning and editing each run under the channel row lock in one transaction, planned by core's
 * planners on what they find there; blanking retired spans needs none (nothing else writes them).
 */
import {
  type ArchiveTime,
  type AuthoredSeqs,
  type EarlierSummary,
  type EditMessageOutcome,
  type HeldMessage,
  ISO_TIME,
  type MessageEdit,
  messageEdited,
  type NewTakeBack,
  PENDING_SUMMARY,
  type PlatformSeq,
  planArchiveRedaction,
  planMessageEdit,
  planSummaryReplacement,
  REDACTED_MESSAGE,
  REDACTED_SUMMARY,
  type RedactArchiveOutcome,
  type ReplaceSummaryOutcome,
  type SeqRange,
  type StoredMessage,
  type SummaryReplacement,
  threadKeyRange,
} from '@ebb/core';
import { and, asc, desc, eq, gt, inArray, lt, ne, notInArray, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import {
  activeSpans,
  copyColumns,
  lockChannel,
  overlapping,
  retireSpans,
  spanRow,
  toSpan,
} from './pg-channel-rows.js';
import { insertTakeBack } from './pg-take-back-log.js';
import { rowsOf } from './rows.js';
import { channels, contextSpans, messages } from './schema.js';

/** The seqs whose text or tool call holds `text`, ignoring case. */
export function seqsContaining(db: EbbDatabase, text: string): Promise<AuthoredSeqs[]> {
  // strpos on lower(): no LIKE wildcards to escape in an operator's text.
  const needle = text.toLowerCase();
  return seqsWhere(
    db,
    sql`(strpos(lower(${messages.content}), ${needle}) > 0 or exists (
      select 1 from jsonb_array_elements(coalesce(${messages.toolCalls}, '[]'::jsonb)) c
      where strpos(lower(c->>'name'), ${needle}) > 0 or strpos(lower(c->>'arguments'), ${needle}) > 0))`,
  );
}

/** The seqs of the messages `where` selects, per channel (channels by key, seqs in order). */
export async function seqsWhere(db: EbbDatabase, where: SQL): Promise<AuthoredSeqs[]> {
  const rows = await db
    .select({ channelKey: messages.channelKey, seq: messages.seq })
    .from(messages)
    .where(where)
    .orderBy(sql`${messages.channelKey} collate "C"`, asc(messages.seq));
  const byChannel = new Map<string, number[]>();
  for (const r of rows) {
    const seqs = byChannel.get(r.channelKey) ?? [];
    seqs.push(r.seq);
    byChannel.set(r.channelKey, seqs);
  }
  return [...byChannel].map(([channelKey, seqs]) => ({ channelKey, seqs }));
}

/** `Forgetting.replaceSummary`: planned by `planSummaryReplacement` under the channel lock. */
export function replaceSummary(
  db: EbbDatabase,
  channelKey: string,
  replacement: SummaryReplacement,
): Promise<ReplaceSummaryOutcome> {
  return db.transaction(async (tx): Promise<ReplaceSummaryOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    const rows = channel === undefined ? [] : await activeSpans(tx, channelKey);
    const spans = rows.map(toSpan);
    const plan = planSummaryReplacement(channel, spans, replacement);
    if (plan.kind === 'missing') return plan;
    const replaced = rows.filter((_, i) => spans[i] === plan.replaced).map((r) => r.id);
    await retireSpans(tx, replaced, plan.generation);
    await tx.insert(contextSpans).values(spanRow(channelKey, plan.span));
    await tx
      .update(channels)
      .set({ generation: plan.generation, spanTokens: plan.spanTokens, updatedAt: sql`now()` })
      .where(eq(channels.key, channelKey));
    const { generation, tokensBefore, tokensAfter } = plan;
    return { kind: 'replaced', generation, tokensBefore, tokensAfter };
  });
}

/**
 * `Forgetting.redactArchive`: planned by `planArchiveRedaction` under the channel lock, the
 * take-back recorded in the same transaction.
 */
export function redactArchive(
  db: EbbDatabase,
  channelKey: string,
  tombstones: readonly StoredMessage[],
  takeBack: NewTakeBack | undefined,
): Promise<RedactArchiveOutcome> {
  return db.transaction(async (tx): Promise<RedactArchiveOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    const seqs = [...new Set(tombstones.map((t) => t.seq))];
    const found =
      channel === undefined || seqs.length === 0
        ? []
        : await tx
            .select({ seq: messages.seq, tokens: messages.contextTokens })
            .from(messages)
            .where(and(eq(messages.channelKey, channelKey), inArray(messages.seq, seqs)))
            .for('update');
    const plan = planArchiveRedaction(channel, found, tombstones);
    // One statement for the whole batch (a retention sweep tombstones hundreds at a time).
    if (plan.tombstones.length > 0) {
      const rows = plan.tombstones.map(({ tombstone: t, copy }) => {
        const c = copyColumns(copy);
        return {
          seq: t.seq,
          content: t.text,
          tokens: t.tokens,
          tool_calls: t.toolCalls === undefined ? null : [...t.toolCalls],
          context_content: c.contextContent,
          context_tokens: c.contextTokens,
          omitted_tokens: c.omittedTokens,
          stubbed: c.stubbed,
        };
      });
      await tx.execute(sql`
        update ${messages} as m set content = r.content, tokens = r.tokens, tool_calls = r.tool_calls,
          context_content = r.context_content, context_tokens = r.context_tokens,
          omitted_tokens = r.omitted_tokens, stubbed = r.stubbed
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(seq integer, content text,
          tokens integer, tool_calls jsonb, context_content text, context_tokens integer,
          omitted_tokens integer, stubbed boolean)
        where m.channel_key = ${channelKey} and m.seq = r.seq`);
    }
    if (plan.copies.length > 0) {
      await tx
        .update(channels)
        .set({ generation: plan.generation, rawTokens: plan.rawTokens, updatedAt: sql`now()` })
        .where(eq(channels.key, channelKey));
    }
    const recorded =
      found.length > 0 && takeBack !== undefined ? await insertTakeBack(tx, channelKey, takeBack) : undefined;
    return {
      redacted: plan.tombstones.length,
      raw: plan.copies.length,
      generation: plan.generation,
      ...(recorded === undefined ? {} : { takeBack: recorded }),
    };
  });
}

/** `Forgetting.redactRetiredSpans`: retired summaries over `ranges` keep their range, not their text. */
export async function redactRetiredSpans(
  db: EbbDatabase,
  channelKey: string,
  ranges: readonly SeqRange[],
): Promise<number> {
  if (ranges.length === 0) return 0;
  const changed = await db
    .update(contextSpans)
    .set({ text: REDACTED_SUMMARY })
    .where(
      and(
        eq(contextSpans.channelKey, channelKey),
        sql`not ${contextSpans.active}`,
        eq(contextSpans.kind, 'summary'),
        ne(contextSpans.text, REDACTED_SUMMARY),
        overlapping(contextSpans.fromSeq, contextSpans.toSeq, ranges),
      ),
    )
    .returning({ id: contextSpans.id });
  return changed.length;
}

/** `PlatformChanges.findByPlatformIds`: by the unique (channel, platform id) index. */
export async function findByPlatformIds(
  db: EbbDatabase,
  channelKey: string,
  platformMessageIds: readonly string[],
): Promise<PlatformSeq[]> {
  if (platformMessageIds.length === 0) return [];
  const rows = await db
    .select({ platformMessageId: messages.platformMessageId, seq: messages.seq })
    .from(messages)
    .where(
      and(
        eq(messages.channelKey, channelKey),
        inArray(messages.platformMessageId, [...new Set(platformMessageIds)]),
      ),
    )
    .orderBy(asc(messages.seq));
  return rows.flatMap((r) =>
    r.platformMessageId === null ? [] : [{ platformMessageId: r.platformMessageId, seq: r.seq }],
  );
}

/**
 * `ArchiveReader.findInThreads`: the channel's threads by key prefix on `channels_key_bytes_idx` (byte
 * order, whatever the database's collation: `pg-find-in-threads.int.test.ts`), then each thread's ids
 * on the unique (channel, platform id) index, so the cost follows the channel's threads. `offset 0`
 * keeps the lookup per thread: flattened into a join, the planner may take the ids as selective and
 * read the whole messages table for them (it did on a table of narrow rows).
 */
export async function findInThreads(
  db: EbbDatabase,
  channelKey: string,
  platformMessageIds: readonly string[],
): Promise<HeldMessage[]> {
  if (platformMessageIds.length === 0) return [];
  return rowsOf<HeldMessage>(await db.execute(findInThreadsQuery(channelKey, platformMessageIds)));
}

/** `findInThreads`'s statement (for a non-empty `platformMessageIds`), exported for its plan's test. */
export function findInThreadsQuery(channelKey: string, platformMessageIds: readonly string[]): SQL {
  const { from, to } = threadKeyRange(channelKey);
  return sql`
    select c.key as "channelKey", m.platform_message_id as "platformMessageId"
    from ${channels} c
    cross join lateral (
      select platform_message_id from ${messages}
      where channel_key = c.key and platform_message_id in ${[...new Set(platformMessageIds)]}
      offset 0
    ) m
    where c.key collate "C" >= ${from} and c.key collate "C" < ${to}
    order by c.key collate "C", m.platform_message_id collate "C"`;
}

/** `PlatformChanges.editMessage`: planned by `planMessageEdit` under the channel lock. */
export function editMessage(
  db: EbbDatabase,
  channelKey: string,
  edit: MessageEdit,
): Promise<EditMessageOutcome> {
  return db.transaction(async (tx): Promise<EditMessageOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    const where = and(eq(messages.channelKey, channelKey), eq(messages.seq, edit.seq));
    const [found] =
      channel === undefined
        ? []
        : await tx
            .select({ seq: messages.seq, tokens: messages.contextTokens })
            .from(messages)
            .where(where)
            .for('update');
    const plan = planMessageEdit(channel, found, edit);
    if (plan.kind === 'missing') return plan;
    await tx
      .update(messages)
      .set({ content: edit.text, tokens: edit.tokens, ...copyColumns(plan.copy) })
      .where(where);
    if (plan.raw) {
      await tx
        .update(channels)
        .set({ generation: plan.generation, rawTokens: plan.rawTokens, updatedAt: sql`now()` })
        .where(eq(channels.key, channelKey));
    }
    const takeBack =
      edit.takeBack === undefined ? undefined : await insertTakeBack(tx, channelKey, edit.takeBack);
    return messageEdited(plan, takeBack);
  });
}

/** `Forgetting.summaryBefore`: the retired summary from `fromSeq` ending latest before `beforeSeq`, text whole. */
export async function summaryBefore(
  db: EbbDatabase,
  channelKey: string,
  fromSeq: number,
  beforeSeq: number,
): Promise<EarlierSummary | undefined> {
  const [row] = await db
    .select({ fromSeq: contextSpans.fromSeq, toSeq: contextSpans.toSeq, text: contextSpans.text })
    .from(contextSpans)
    .where(
      and(
        eq(contextSpans.channelKey, channelKey),
        sql`not ${contextSpans.active}`,
        eq(contextSpans.kind, 'summary'),
        eq(contextSpans.fromSeq, fromSeq),
        lt(contextSpans.toSeq, beforeSeq),
        notInArray(contextSpans.text, [REDACTED_SUMMARY, PENDING_SUMMARY]),
      ),
    )
    .orderBy(desc(contextSpans.toSeq), desc(contextSpans.id))
    .limit(1);
  return row?.text == null ? undefined : { fromSeq: row.fromSeq, toSeq: row.toSeq, text: row.text };
}

/** `ArchiveReader.findRecalling`: `?|` on the partial GIN index of the replies that recalled anything. */
export async function findRecalling(
  db: EbbDatabase,
  channelKey: string,
  memoryIds: readonly string[],
): Promise<number[]> {
  if (memoryIds.length === 0) return [];
  const ids = sql.join(
    [...new Set(memoryIds)].map((id) => sql`${id}`),
    sql`, `,
  );
  const rows = await db
    .select({ seq: messages.seq })
    .from(messages)
    .where(
      and(eq(messages.channelKey, channelKey), sql`${messages.recalledMemories} ?| array[${ids}]::text[]`),
    )
    .orderBy(asc(messages.seq));
  return rows.map((r) => r.seq);
}

/** A time zone at the end of an ISO time. */
const ZONE = /(Z|[+-]\d{2}:?\d{2})$/;

/**
 * `ArchiveReader.archiveTimes`: a page of the channel's messages by the primary key, no text: the
 * platform time where `ts` is ISO 8601 (`messageTime`'s rule; a cast that could fail is not
 * attempted), else `created_at`.
 */
export async function archiveTimes(
  db: EbbDatabase,
  channelKey: string,
  afterSeq: number,
  limit: number,
): Promise<ArchiveTime[]> {
  if (limit <= 0) return [];
  const rows = await db
    .select({
      seq: messages.seq,
      // core's messageTime in SQL: an ISO time, a zone-less one as UTC, else the archive time.
      at: sql<number>`round(extract(epoch from case
        when ${messages.ts} ~ ${ISO_TIME.source} and ${messages.ts} ~ ${ZONE.source} then ${messages.ts}::timestamptz
        when ${messages.ts} ~ ${ISO_TIME.source} then (${messages.ts} || 'Z')::timestamptz
        else ${messages.createdAt} end) * 1000)::float8`.mapWith(Number),
      taken: sql<boolean>`${messages.content} = ${REDACTED_MESSAGE}`,
    })
    .from(messages)
    .where(and(eq(messages.channelKey, channelKey), gt(messages.seq, afterSeq)))
    .orderBy(asc(messages.seq))
    .limit(limit);
  return rows.map((r) => ({ seq: r.seq, at: r.at, taken: r.taken === true }));
}
