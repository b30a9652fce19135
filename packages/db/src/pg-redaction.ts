/**
 * What forgetting needs of the channel store on Postgres (`ebb forget`, and a deletion or an edit on
 * a platform): finding the messages to redact, replacing a summary span with one written again,
 * tombstoning or editing archived messages and blanking retired spans. Replacing a span and tombstoning messages run under the channel row lock
 * in one transaction; blanking retired spans needs none (nothing else writes retired spans).
 */
import {
  type AuthoredSeqs,
  type EarlierSummary,
  type EditMessageOutcome,
  type MessageEdit,
  PENDING_SUMMARY,
  type PlatformSeq,
  REDACTED_SUMMARY,
  type RedactArchiveOutcome,
  type ReplaceSummaryOutcome,
  type SeqRange,
  type StoredMessage,
  type SummaryReplacement,
} from '@ebb/core';
import { and, asc, desc, eq, inArray, lt, ne, notInArray, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { activeSpans, lockChannel, overlapping, retireSpans, spanRow } from './pg-channel-rows.js';
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

/** `ArchiveEditor.replaceSummary`: under the channel lock, in one transaction. */
export function replaceSummary(
  db: EbbDatabase,
  channelKey: string,
  replacement: SummaryReplacement,
): Promise<ReplaceSummaryOutcome> {
  return db.transaction(async (tx): Promise<ReplaceSummaryOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel) return { kind: 'missing' };
    const old = (await activeSpans(tx, channelKey)).find(
      (r) =>
        r.kind === 'summary' &&
        r.fromSeq === replacement.fromSeq &&
        r.toSeq === replacement.toSeq &&
        r.jobId === replacement.replaces,
    );
    if (!old) return { kind: 'missing' };
    const generation = channel.generation + 1;
    await retireSpans(tx, [old.id], generation);
    await tx.insert(contextSpans).values(
      spanRow(channelKey, {
        kind: 'summary',
        fromSeq: replacement.fromSeq,
        toSeq: replacement.toSeq,
        text: replacement.text,
        tokens: replacement.tokens,
        createdGeneration: generation,
        jobId: replacement.jobId,
      }),
    );
    const spanTokens = channel.spanTokens - old.tokens + replacement.tokens;
    await tx
      .update(channels)
      .set({ generation, spanTokens, updatedAt: sql`now()` })
      .where(eq(channels.key, channelKey));
    return {
      kind: 'replaced',
      generation,
      tokensBefore: channel.spanTokens + channel.rawTokens,
      tokensAfter: spanTokens + channel.rawTokens,
    };
  });
}

/** `ArchiveEditor.redactArchive`: tombstones written under the channel lock; raw ones move the totals. */
export function redactArchive(
  db: EbbDatabase,
  channelKey: string,
  tombstones: readonly StoredMessage[],
): Promise<RedactArchiveOutcome> {
  return db.transaction(async (tx): Promise<RedactArchiveOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel || tombstones.length === 0) {
      return { redacted: 0, raw: 0, generation: channel?.generation ?? 0 };
    }
    let redacted = 0;
    let raw = 0;
    let rawDelta = 0;
    for (const t of tombstones) {
      const [before] = await tx
        .select({ contextTokens: messages.contextTokens })
        .from(messages)
        .where(and(eq(messages.channelKey, channelKey), eq(messages.seq, t.seq)))
        .for('update');
      if (!before) continue;
      await tx
        .update(messages)
        .set({
          content: t.text,
          contextContent: null,
          tokens: t.tokens,
          contextTokens: t.tokens,
          omittedTokens: null,
          stubbed: false,
          toolCalls: t.toolCalls === undefined ? null : [...t.toolCalls],
        })
        .where(and(eq(messages.channelKey, channelKey), eq(messages.seq, t.seq)));
      redacted++;
      if (t.seq > channel.prefixEnd) {
        raw++;
        rawDelta += t.tokens - before.contextTokens;
      }
    }
    const generation = raw > 0 ? channel.generation + 1 : channel.generation;
    if (raw > 0) {
      await tx
        .update(channels)
        .set({ generation, rawTokens: channel.rawTokens + rawDelta, updatedAt: sql`now()` })
        .where(eq(channels.key, channelKey));
    }
    return { redacted, raw, generation };
  });
}

/** `ArchiveEditor.redactRetiredSpans`: retired summaries over `ranges` keep their range, not their text. */
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

/** `ArchiveEditor.findByPlatformIds`: by the unique (channel, platform id) index. */
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

/** `ArchiveEditor.editMessage`: under the channel lock; a raw copy moves the totals and the generation. */
export function editMessage(
  db: EbbDatabase,
  channelKey: string,
  edit: MessageEdit,
): Promise<EditMessageOutcome> {
  return db.transaction(async (tx): Promise<EditMessageOutcome> => {
    const channel = await lockChannel(tx, channelKey);
    if (!channel) return { kind: 'missing' };
    const where = and(eq(messages.channelKey, channelKey), eq(messages.seq, edit.seq));
    const [before] = await tx
      .select({ contextTokens: messages.contextTokens })
      .from(messages)
      .where(where)
      .for('update');
    if (!before) return { kind: 'missing' };
    await tx
      .update(messages)
      .set({
        content: edit.text,
        contextContent: edit.contextText ?? null,
        tokens: edit.tokens,
        contextTokens: edit.contextTokens,
        omittedTokens: edit.omittedTokens ?? null,
        stubbed: false,
      })
      .where(where);
    const tokensBefore = channel.spanTokens + channel.rawTokens;
    if (edit.seq <= channel.prefixEnd)
      return {
        kind: 'edited',
        raw: false,
        generation: channel.generation,
        tokensBefore,
        tokensAfter: tokensBefore,
      };
    const generation = channel.generation + 1;
    const rawTokens = channel.rawTokens + edit.contextTokens - before.contextTokens;
    await tx
      .update(channels)
      .set({ generation, rawTokens, updatedAt: sql`now()` })
      .where(eq(channels.key, channelKey));
    return {
      kind: 'edited',
      raw: true,
      generation,
      tokensBefore,
      tokensAfter: channel.spanTokens + rawTokens,
    };
  });
}

/** `ArchiveEditor.summaryBefore`: the retired summary from `fromSeq` ending latest before `beforeSeq`, text whole. */
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
