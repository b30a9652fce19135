/**
 * A channel's archive read back in order for `ebb simulate --from-archive`: pages by ranges of seq on
 * the `(channel_key, seq)` primary key, `batchSize` rows at a time, so replaying a million
 * messages holds one page in memory (an OFFSET would re-read every earlier row per page, and a
 * server-side cursor would pin a pooled connection and a transaction for the whole replay). Also what
 * the channel's recorded passes took (`compaction_runs.duration_ms`), which the replay's passes take.
 */
import type { ArchivedMessage, CompactionRun } from '@ebb/core';
import { and, asc, between, eq, gte, isNotNull, or, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { dbCall } from './pg-errors.js';
import { withoutNulls } from './rows.js';
import { channels, compactionRuns, messages } from './schema.js';

export interface ArchiveReadOptions {
  /** Only messages archived at or after this time (`--since`). */
  readonly since?: Date;
  /** Rows per page (default 2,000). */
  readonly batchSize?: number;
}

export const DEFAULT_ARCHIVE_READ = { batchSize: 2_000 } as const satisfies Pick<
  Required<ArchiveReadOptions>,
  'batchSize'
>;

/** Seconds since the epoch, as Slack writes a message's `ts` (`1700000000.000100`). */
const EPOCH_SECONDS = /^\d{9,11}(\.\d+)?$/;

/** Durations of a channel's passes that ran their summarizer (completed, or stale at the splice), in milliseconds. */
export interface PassDurations {
  readonly runs: number;
  readonly medianMs: number | null;
  /** The 90th percentile: the slow tail a replay should survive. */
  readonly slowMs: number | null;
}

export class PgArchiveReader {
  readonly #db: EbbDatabase;

  constructor(options: { readonly db: EbbDatabase }) {
    this.#db = options.db;
  }

  /**
   * The channel's archived messages, oldest first, each with an ISO `ts`: the message's own time when
   * it is one (ISO, or Slack's epoch seconds), else when it was archived.
   */
  async *messages(channelKey: string, options: ArchiveReadOptions = {}): AsyncGenerator<ArchivedMessage> {
    const batchSize = options.batchSize ?? DEFAULT_ARCHIVE_READ.batchSize;
    const since = options.since === undefined ? undefined : gte(messages.createdAt, options.since);
    const [bounds] = await dbCall('readArchive', () =>
      this.#db
        .select({
          first: sql<number | null>`min(${messages.seq})`,
          last: sql<number | null>`max(${messages.seq})`,
        })
        .from(messages)
        .where(and(eq(messages.channelKey, channelKey), since)),
    );
    if (bounds?.first == null || bounds.last == null) return;
    // Seqs are dense (1..head, nothing is ever deleted), so a page is a range of seqs: the planner
    // reads exactly those rows however stale its statistics (`seq > x order by seq limit n` on a
    // freshly loaded table became a bitmap scan and a sort of every later row, per page).
    for (let from = Number(bounds.first); from <= Number(bounds.last); from += batchSize) {
      const page = await dbCall('readArchive', () =>
        this.#db
          .select({
            seq: messages.seq,
            role: messages.role,
            author: messages.author,
            text: messages.content,
            ts: messages.ts,
            createdAt: messages.createdAt,
            toolCalls: messages.toolCalls,
            toolCallId: messages.toolCallId,
          })
          .from(messages)
          .where(
            and(
              eq(messages.channelKey, channelKey),
              between(messages.seq, from, Math.min(from + batchSize - 1, Number(bounds.last))),
              since,
            ),
          )
          .orderBy(asc(messages.seq)),
      );
      for (const { createdAt, ts, ...row } of page) {
        yield { ...withoutNulls(row), ts: messageTime(ts, createdAt) };
      }
    }
  }

  /** How many messages `messages` would yield. */
  count(channelKey: string, options: Pick<ArchiveReadOptions, 'since'> = {}): Promise<number> {
    return dbCall('countArchive', async () => {
      const [row] = await this.#db
        .select({ n: sql<number>`count(*)::int` })
        .from(messages)
        .where(
          and(
            eq(messages.channelKey, channelKey),
            options.since === undefined ? undefined : gte(messages.createdAt, options.since),
          ),
        );
      return row?.n ?? 0;
    });
  }

  /** Keys of every channel with a row, in key order (a glob is matched by the caller). */
  channelKeys(): Promise<string[]> {
    return dbCall('listChannels', async () => {
      const rows = await this.#db
        .select({ key: channels.key })
        .from(channels)
        .orderBy(sql`${channels.key} collate "C"`);
      return rows.map((r) => r.key);
    });
  }

  /** Median and 90th percentile of the channel's passes that ran their summarizer (since `since`). */
  passDurations(channelKey: string, options: Pick<ArchiveReadOptions, 'since'> = {}): Promise<PassDurations> {
    return dbCall('passDurations', async () => {
      const [row] = await this.#db
        .select({
          runs: sql<number>`count(*)::int`,
          medianMs: sql<
            number | null
          >`percentile_cont(0.5) within group (order by ${compactionRuns.durationMs})`,
          slowMs: sql<
            number | null
          >`percentile_cont(0.9) within group (order by ${compactionRuns.durationMs})`,
        })
        .from(compactionRuns)
        .where(
          and(
            eq(compactionRuns.channelKey, channelKey),
            // A pass refused at its splice (stale) ran its summarizer all the same; one found stale
            // before any model call (no tokens) says nothing about how long passes take.
            or(
              eq(compactionRuns.status, 'completed'),
              and(eq(compactionRuns.status, 'stale'), isNotNull(compactionRuns.outputTokens)),
            ),
            isNotNull(compactionRuns.durationMs),
            options.since === undefined ? undefined : gte(compactionRuns.createdAt, options.since),
          ),
        );
      const ms = (v: number | string | null | undefined) =>
        v === null || v === undefined ? null : Number(v);
      return { runs: row?.runs ?? 0, medianMs: ms(row?.medianMs), slowMs: ms(row?.slowMs) };
    });
  }
}

/**
 * `passDurations` over runs already read (the dashboard's `RunStore.recent`): the same passes counted
 * and the same percentiles as Postgres's `percentile_cont` (linear between the two nearest).
 */
export function passDurationsOf(runs: readonly CompactionRun[]): PassDurations {
  const ms = runs
    .filter((r) => r.status === 'completed' || (r.status === 'stale' && r.outputTokens !== undefined))
    .map((r) => r.durationMs)
    .filter((d): d is number => d !== undefined)
    .sort((a, b) => a - b);
  const at = (p: number) => {
    if (ms.length === 0) return null;
    const i = p * (ms.length - 1);
    const lo = ms[Math.floor(i)] ?? 0;
    const hi = ms[Math.ceil(i)] ?? lo;
    return lo + (hi - lo) * (i - Math.floor(i));
  };
  return { runs: ms.length, medianMs: at(0.5), slowMs: at(0.9) };
}

function messageTime(ts: string | null, archivedAt: Date): string {
  return (ts === null ? undefined : isoMessageTime(ts)) ?? archivedAt.toISOString();
}

/** A message's `ts` as an ISO time (it may be ISO, or Slack's epoch seconds); undefined when it is neither. */
export function isoMessageTime(ts: string): string | undefined {
  const parsed = EPOCH_SECONDS.test(ts) ? Number(ts) * 1000 : Date.parse(ts);
  return Number.isNaN(parsed) ? undefined : new Date(parsed).toISOString();
}
