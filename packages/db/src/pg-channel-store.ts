/**
 * The channel ports (`TurnLog`, `ArchiveReader`, `ContextWriter`, `Forgetting`, `PlatformChanges`,
 * `ChannelDirectory`) on Postgres (or PGlite). The channel row is the lock: an append, a splice and a
 * truncation each take it (`FOR UPDATE`, or the row an upsert locks) inside one short transaction,
 * plan on what they find there with the core's pure planners, and write the result. No lock outlives
 * its transaction, and no transaction waits on anything but the database.
 *
 * The class is the ports' face and maps errors (`dbCall`); the work lives beside it, a module a concern:
 * - `pg-append.ts`: one message appended under the row lock, fenced.
 * - `pg-load-channel.ts`: the working context (or its tail) in one statement.
 * - `pg-compaction-writes.ts`: a pass's splice and the emergency truncation.
 * - `pg-microcompaction.ts`: stubs in place of old tool results.
 * - `pg-redaction.ts`: forgetting: finding messages, tombstones, edits, summaries written again.
 * - `pg-channel-summaries.ts`: the counters `ChannelDirectory` lists.
 * - `pg-channel-rows.ts`: the row lock, the active spans and their rows, which all of them share.
 * - `pg-take-back-log.ts`: the take-backs a redaction or an edit records (`takeBacks`).
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
  type RedactArchiveOutcome,
  type ReplaceSummaryOutcome,
  type SeqRange,
  type SpliceOutcome,
  type StoredMessage,
  type StubOutcome,
  type StubRequest,
  type SummaryReplacement,
  type SummaryResult,
  type TruncationOutcome,
  type TruncationRequest,
  type TurnLog,
  UNCALIBRATED,
} from '@ebb/core';
import { and, asc, between, eq, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { DUPLICATE, insertMessage } from './pg-append.js';
import { readPrefix, toSpan } from './pg-channel-rows.js';
import { listChannelSummaries, readChannelSummary } from './pg-channel-summaries.js';
import { spliceSummary, truncateContext } from './pg-compaction-writes.js';
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
import { PgTakeBackLog } from './pg-take-back-log.js';
import { platformColumn, withoutNulls } from './rows.js';
import { channels, messages } from './schema.js';

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
    return dbCall('splice', () => spliceSummary(this.#db, channelKey, result));
  }

  truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome> {
    return dbCall('truncate', () => truncateContext(this.#db, channelKey, request));
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
