/**
 * The channel ports (`TurnLog`, `ArchiveReader`, `ContextWriter`, `Forgetting`, `PlatformChanges`,
 * `ChannelDirectory`) on Postgres (or PGlite). The channel row is the lock: an append, a splice and a
 * truncation each take it (`FOR UPDATE`, or the row an upsert locks) inside one short transaction,
 * plan on what they find there with the core's pure planners, and write the result. No lock outlives
 * its transaction, and no transaction waits on anything but the database.
 */
import {
  type AppendOptions,
  type AppendResult,
  type ArchiveReader,
  type ArchiveTime,
  type AuthoredSeqs,
  type Calibration,
  type ChannelDirectory,
  type ChannelSummary,
  type ContextDelta,
  type ContextView,
  type ContextWriter,
  checkedFence,
  contextTotal,
  countersAfterSplice,
  countersAfterTruncation,
  type EarlierSummary,
  type EditMessageOutcome,
  type Forgetting,
  type HeldMessage,
  InvariantError,
  type LoadedChannel,
  type MessageEdit,
  type NewMessage,
  type NewTakeBack,
  type PlatformChanges,
  type PlatformSeq,
  type PrefixView,
  planEmergencyTruncation,
  planSplice,
  type RedactArchiveOutcome,
  type ReplaceSummaryOutcome,
  type SeqRange,
  type Span,
  type SpliceOutcome,
  type StoredMessage,
  type StubOutcome,
  type StubRequest,
  type SummaryReplacement,
  type SummaryResult,
  TAKEN_BACK_REASON,
  type TruncationOutcome,
  type TruncationRequest,
  type TurnLog,
  truncationIsStale,
  UNCALIBRATED,
} from '@ebb/core';
import { and, asc, between, eq, gt, lte, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { DUPLICATE, insertMessage } from './pg-append.js';
import { activeSpans, lockChannel, readPrefix, retireSpans, spanRow, toSpan } from './pg-channel-rows.js';
import { listChannelSummaries, readChannelSummary } from './pg-channel-summaries.js';
import { dbCall } from './pg-errors.js';
import { loadChannel, loadContextAfter } from './pg-load-channel.js';
import { stubToolResults } from './pg-microcompaction.js';
import {
  archiveTimes,
  editMessage,
  findByPlatformIds,
  findInThreads,
  findRecalling,
  redactArchive,
  redactRetiredSpans,
  replaceSummary,
  seqsContaining,
  seqsWhere,
  summaryBefore,
} from './pg-redaction.js';
import { PgTakeBackLog, takenBackSince } from './pg-take-back-log.js';
import { platformColumn, withoutNulls } from './rows.js';
import { channels, contextSpans, messages } from './schema.js';

export class PgChannelStore
  implements TurnLog, ArchiveReader, ContextWriter, Forgetting, PlatformChanges, ChannelDirectory
{
  readonly #db: EbbDatabase;
  /** The take-backs `redactArchive` and `editMessage` record, in the same database. */
  readonly takeBacks: PgTakeBackLog;

  constructor(options: PgStoreOptions) {
    this.#db = options.db;
    this.takeBacks = new PgTakeBackLog(options);
  }

  append(channelKey: string, message: NewMessage, options: AppendOptions = {}): Promise<AppendResult> {
    return dbCall('append', async () => {
      const fence = checkedFence(options.fence);
      try {
        return await this.#db.transaction((tx) => insertMessage(tx, channelKey, message, fence));
      } catch (err) {
        if (err !== DUPLICATE || message.platformMessageId === undefined) throw err;
        return this.#stored(channelKey, message.platformMessageId);
      }
    });
  }

  async appendAll(
    channelKey: string,
    group: readonly NewMessage[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    if (group.some((m) => m.platformMessageId !== undefined)) {
      throw new InvariantError(
        'appendAll takes messages without a platform id (a tool call and its results)',
      );
    }
    const fence = checkedFence(options.fence);
    return dbCall('appendAll', () =>
      // One transaction: the first insert locks the channel row, so no other append lands between
      // (and a refused fence rolls back all of them).
      this.#db.transaction(async (tx) => {
        const results: AppendResult[] = [];
        for (const message of group) results.push(await insertMessage(tx, channelKey, message, fence));
        return results;
      }),
    );
  }

  async #stored(channelKey: string, platformMessageId: string): Promise<AppendResult> {
    const [row] = await this.#db
      .select({
        seq: messages.seq,
        generation: channels.generation,
        headSeq: channels.headSeq,
        contextTokens: sql<number>`${channels.spanTokens} + ${channels.rawTokens}`.mapWith(Number),
      })
      .from(messages)
      .innerJoin(channels, eq(channels.key, messages.channelKey))
      .where(and(eq(messages.channelKey, channelKey), eq(messages.platformMessageId, platformMessageId)));
    if (!row) throw new Error(`message ${platformMessageId} of ${channelKey} neither inserted nor found`);
    return { ...row, inserted: false };
  }

  loadContext(channelKey: string): Promise<ContextView> {
    return dbCall('loadContext', async () => (await loadChannel(this.#db, channelKey)).context);
  }

  loadChannel(channelKey: string): Promise<LoadedChannel> {
    return dbCall('loadChannel', () => loadChannel(this.#db, channelKey));
  }

  loadAfter(channelKey: string, afterSeq: number): Promise<ContextDelta> {
    return dbCall('loadAfter', () => loadContextAfter(this.#db, channelKey, afterSeq));
  }

  loadPrefix(channelKey: string): Promise<PrefixView> {
    return dbCall('loadPrefix', () =>
      this.#db.transaction(
        async (tx) => {
          const prefix = await readPrefix(tx, channelKey);
          if (!prefix) return { generation: 0, headSeq: 0, spans: [] };
          return {
            generation: prefix.channel.generation,
            headSeq: prefix.channel.headSeq,
            spans: prefix.spans.map(toSpan),
          };
        },
        { isolationLevel: 'repeatable read', accessMode: 'read only' },
      ),
    );
  }

  generation(channelKey: string): Promise<number> {
    return dbCall('generation', async () => {
      const [row] = await this.#db
        .select({ generation: channels.generation })
        .from(channels)
        .where(eq(channels.key, channelKey));
      return row?.generation ?? 0;
    });
  }

  readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
    return dbCall('readArchive', async () => {
      const rows = await this.#db
        .select({
          seq: messages.seq,
          role: messages.role,
          author: messages.author,
          text: messages.content,
          tokens: messages.tokens,
          ts: messages.ts,
          toolCalls: messages.toolCalls,
          toolCallId: messages.toolCallId,
          stubbed: messages.stubbed,
          stubText: messages.contextContent,
          stubTokens: messages.contextTokens,
        })
        .from(messages)
        .where(and(eq(messages.channelKey, channelKey), between(messages.seq, fromSeq, toSeq)))
        .orderBy(asc(messages.seq));
      return rows.map(({ stubbed, stubText, stubTokens, ...r }): StoredMessage => {
        const message = withoutNulls(r);
        return stubbed && stubText !== null
          ? { ...message, stub: { text: stubText, tokens: stubTokens } }
          : message;
      });
    });
  }

  readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]> {
    return dbCall('readAuthors', async () => {
      const rows = await this.#db
        .selectDistinct({ author: messages.author })
        .from(messages)
        .where(and(eq(messages.channelKey, channelKey), between(messages.seq, fromSeq, toSeq)));
      // Code-unit order, as the in-memory store sorts, whatever the database's collation.
      return rows.map((r) => r.author).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    });
  }

  archiveTimes(channelKey: string, afterSeq: number, limit: number): Promise<ArchiveTime[]> {
    return dbCall('archiveTimes', () => archiveTimes(this.#db, channelKey, afterSeq, limit));
  }

  findRecalling(channelKey: string, memoryIds: readonly string[]): Promise<number[]> {
    return dbCall('findRecalling', () => findRecalling(this.#db, channelKey, memoryIds));
  }

  findInThreads(channelKey: string, platformMessageIds: readonly string[]): Promise<HeldMessage[]> {
    return dbCall('findInThreads', () => findInThreads(this.#db, channelKey, platformMessageIds));
  }

  splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome> {
    return dbCall('splice', () =>
      this.#db.transaction(async (tx) => {
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

        await tx
          .update(channels)
          .set({ generation, prefixEnd: after.prefixEnd, spanTokens, rawTokens, updatedAt: sql`now()` })
          .where(eq(channels.key, channelKey));
        return {
          kind: 'splice',
          generation,
          tokensBefore: contextTotal(channel),
          tokensAfter: contextTotal({ spanTokens, rawTokens }),
          messagesRemoved: dropped?.messages ?? 0,
        };
      }),
    );
  }

  truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome> {
    return dbCall('truncate', () =>
      this.#db.transaction(async (tx): Promise<TruncationOutcome> => {
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
        await tx
          .update(channels)
          .set({ generation, prefixEnd: after.prefixEnd, spanTokens, rawTokens, updatedAt: sql`now()` })
          .where(eq(channels.key, channelKey));
        return {
          kind: 'truncate',
          plan,
          generation,
          tokensBefore,
          tokensAfter: contextTotal({ spanTokens, rawTokens }),
        };
      }),
    );
  }

  stubToolResults(channelKey: string, request: StubRequest): Promise<StubOutcome> {
    return dbCall('stubToolResults', () => stubToolResults(this.#db, channelKey, request));
  }

  findAuthored(author: string, channelKey?: string): Promise<AuthoredSeqs[]> {
    return dbCall('findAuthored', () =>
      seqsWhere(
        this.#db,
        channelKey === undefined
          ? eq(messages.author, author)
          : // lower() as messages_author_idx has it, so one channel's lookup is an index range.
            sql`${messages.channelKey} = ${channelKey} and lower(${messages.author}) = lower(${author}) and ${messages.author} = ${author}`,
      ),
    );
  }

  findContaining(text: string): Promise<AuthoredSeqs[]> {
    return dbCall('findContaining', () => seqsContaining(this.#db, text));
  }

  replaceSummary(channelKey: string, replacement: SummaryReplacement): Promise<ReplaceSummaryOutcome> {
    return dbCall('replaceSummary', () => replaceSummary(this.#db, channelKey, replacement));
  }

  redactArchive(
    channelKey: string,
    tombstones: readonly StoredMessage[],
    takeBack: NewTakeBack | undefined,
  ): Promise<RedactArchiveOutcome> {
    return dbCall('redactArchive', () => redactArchive(this.#db, channelKey, tombstones, takeBack));
  }

  summaryBefore(channelKey: string, fromSeq: number, beforeSeq: number): Promise<EarlierSummary | undefined> {
    return dbCall('summaryBefore', () => summaryBefore(this.#db, channelKey, fromSeq, beforeSeq));
  }

  findByPlatformIds(channelKey: string, platformMessageIds: readonly string[]): Promise<PlatformSeq[]> {
    return dbCall('findByPlatformIds', () => findByPlatformIds(this.#db, channelKey, platformMessageIds));
  }

  editMessage(channelKey: string, edit: MessageEdit): Promise<EditMessageOutcome> {
    return dbCall('editMessage', () => editMessage(this.#db, channelKey, edit));
  }

  redactRetiredSpans(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    return dbCall('redactRetiredSpans', () => redactRetiredSpans(this.#db, channelKey, ranges));
  }

  calibration(channelKey: string): Promise<Calibration> {
    return dbCall('calibration', async () => {
      const [row] = await this.#db
        .select({ factor: channels.calibrationFactor, samples: channels.calibrationSamples })
        .from(channels)
        .where(eq(channels.key, channelKey));
      return row ?? UNCALIBRATED;
    });
  }

  setCalibration(channelKey: string, calibration: Calibration): Promise<void> {
    return dbCall('setCalibration', async () => {
      const values = { calibrationFactor: calibration.factor, calibrationSamples: calibration.samples };
      await this.#db
        .insert(channels)
        .values({ key: channelKey, platform: platformColumn(channelKey), ...values })
        .onConflictDoUpdate({ target: channels.key, set: { ...values, updatedAt: sql`now()` } });
    });
  }

  listChannels(): Promise<ChannelSummary[]> {
    return dbCall('listChannels', () => listChannelSummaries(this.#db));
  }

  channelSummary(channelKey: string): Promise<ChannelSummary | undefined> {
    return dbCall('channelSummary', () => readChannelSummary(this.#db, channelKey));
  }
}
