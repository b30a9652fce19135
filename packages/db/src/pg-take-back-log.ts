/**
 * `TakeBackLog` on Postgres (or PGlite), and the write the channel store makes with its tombstones
 * (`insertTakeBack`, inside the caller's transaction, the channel row locked). A take-back's mark is
 * the channel's `take_back_mark` after it: marks move only under the row lock, so a pass that read the
 * mark before its snapshot knows every take-back with a higher one came after what it read (a
 * sequence's ids would not say that: a transaction may take an id and commit after a later one).
 *
 * Claims are a lease (`claimed_until`): a bot or worker that dies holding one leaves the row to the
 * next process that looks once the lease runs out; finishing is idempotent.
 */
import {
  type NewTakeBack,
  type PendingTakeBacks,
  type SeqRange,
  type TakeBack,
  type TakeBackCounts,
  type TakeBackLog,
  takeBackBounds,
} from '@ebb/core';
import { and, asc, eq, gt, gte, lte, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { dbCall } from './pg-errors.js';
import { rowsOf } from './rows.js';
import { channels, takeBacks } from './schema.js';

type Row = typeof takeBacks.$inferSelect;

/** Records `takeBack` and moves the channel's mark, in `tx`, which holds the channel row's lock. */
export async function insertTakeBack(
  tx: EbbDatabase,
  channelKey: string,
  takeBack: NewTakeBack,
): Promise<TakeBack> {
  const [channel] = await tx
    .update(channels)
    .set({ takeBackMark: sql`${channels.takeBackMark} + 1` })
    .where(eq(channels.key, channelKey))
    .returning({ mark: channels.takeBackMark });
  if (!channel) throw new Error(`take-back for ${channelKey}, which the store does not hold`);
  const ranges = takeBack.ranges.map((r) => ({ fromSeq: r.fromSeq, toSeq: r.toSeq }));
  const [row] = await tx
    .insert(takeBacks)
    .values({
      channelKey,
      mark: channel.mark,
      kind: takeBack.kind,
      ranges,
      ...takeBackBounds(ranges),
      platformMessageIds: [...takeBack.platformMessageIds],
    })
    .returning();
  if (!row) throw new Error('the take-back insert returned no row');
  return toTakeBack(row);
}

/** The channel's take-backs above `mark` over `range`, in the caller's transaction (the splice's check). */
export async function takenBackSince(
  tx: EbbDatabase,
  channelKey: string,
  mark: number,
  range: SeqRange,
): Promise<TakeBack[]> {
  const rows = await tx
    .select()
    .from(takeBacks)
    .where(
      and(
        eq(takeBacks.channelKey, channelKey),
        gt(takeBacks.mark, mark),
        lte(takeBacks.fromSeq, range.toSeq),
        gte(takeBacks.toSeq, range.fromSeq),
      ),
    )
    .orderBy(asc(takeBacks.mark));
  // The bounds are a coarse filter: a take-back of seqs 3 and 90 does not cover 10..20.
  return rows
    .map(toTakeBack)
    .filter((t) => t.ranges.some((r) => r.fromSeq <= range.toSeq && range.fromSeq <= r.toSeq));
}

export class PgTakeBackLog implements TakeBackLog {
  readonly #db: EbbDatabase;

  constructor(options: PgStoreOptions) {
    this.#db = options.db;
  }

  takeBackMark(channelKey: string): Promise<number> {
    return dbCall('takeBackMark', async () => {
      const [row] = await this.#db
        .select({ mark: channels.takeBackMark })
        .from(channels)
        .where(eq(channels.key, channelKey));
      return row?.mark ?? 0;
    });
  }

  takenBackSince(channelKey: string, mark: number, range: SeqRange): Promise<TakeBack[]> {
    return dbCall('takenBackSince', () => takenBackSince(this.#db, channelKey, mark, range));
  }

  recordTakeBack(channelKey: string, takeBack: NewTakeBack): Promise<TakeBack> {
    return dbCall('recordTakeBack', () =>
      this.#db.transaction(async (tx) => {
        await tx
          .select({ key: channels.key })
          .from(channels)
          .where(eq(channels.key, channelKey))
          .for('update');
        return insertTakeBack(tx, channelKey, takeBack);
      }),
    );
  }

  claimTakeBacks(options: {
    readonly limit: number;
    readonly leaseMs: number;
    readonly id?: string;
  }): Promise<TakeBack[]> {
    return dbCall('claimTakeBacks', async () => {
      if (options.limit <= 0) return [];
      const id = options.id === undefined ? undefined : idOf(options.id);
      if (id === null) return [];
      // SKIP LOCKED: two processes sweeping at once claim different rows.
      const rows = await this.#db.execute(sql`
        update ${takeBacks} set
          claimed_until = now() + ${`${Math.max(0, Math.round(options.leaseMs))} milliseconds`}::interval,
          attempts = attempts + 1
        where id in (
          select id from ${takeBacks}
          where status = 'pending' and (claimed_until is null or claimed_until <= now())
            ${id === undefined ? sql`` : sql`and id = ${id}`}
          order by created_at, id
          limit ${options.limit}
          for update skip locked
        )
        returning id`);
      const ids = rowsOf<{ id: string | number }>(rows);
      if (ids.length === 0) return [];
      const claimed = await this.#db
        .select()
        .from(takeBacks)
        .where(sql`${takeBacks.id} in ${ids.map((r) => Number(r.id))}`)
        .orderBy(asc(takeBacks.createdAt), asc(takeBacks.id));
      return claimed.map(toTakeBack);
    });
  }

  renewTakeBack(id: string, leaseMs: number): Promise<void> {
    return dbCall('renewTakeBack', async () => {
      const numeric = idOf(id);
      if (numeric === null) return;
      await this.#db
        .update(takeBacks)
        .set({ claimedUntil: sql`now() + ${`${Math.max(0, Math.round(leaseMs))} milliseconds`}::interval` })
        .where(and(eq(takeBacks.id, numeric), eq(takeBacks.status, 'pending')));
    });
  }

  finishTakeBack(
    id: string,
    outcome: { readonly counts: TakeBackCounts } | { readonly error: string },
  ): Promise<void> {
    return dbCall('finishTakeBack', async () => {
      const numeric = idOf(id);
      if (numeric === null) return;
      const where = and(eq(takeBacks.id, numeric), eq(takeBacks.status, 'pending'));
      if ('counts' in outcome) {
        await this.#db
          .update(takeBacks)
          .set({ status: 'completed', completedAt: sql`now()`, error: null, ...outcome.counts })
          .where(where);
      } else {
        await this.#db.update(takeBacks).set({ error: outcome.error, claimedUntil: null }).where(where);
      }
    });
  }

  pendingTakeBacks(channelKey?: string): Promise<TakeBack[]> {
    return dbCall('pendingTakeBacks', async () => {
      const rows = await this.#db
        .select()
        .from(takeBacks)
        .where(
          and(
            sql`${takeBacks.status} = 'pending'`,
            channelKey === undefined ? undefined : eq(takeBacks.channelKey, channelKey),
          ),
        )
        .orderBy(asc(takeBacks.createdAt), asc(takeBacks.id));
      return rows.map(toTakeBack);
    });
  }

  pendingTakeBackCounts(channelKey?: string): Promise<PendingTakeBacks[]> {
    return dbCall('pendingTakeBackCounts', async () => {
      // One grouped read over the pending rows (the partial index keeps it to those).
      const rows = await this.#db
        .select({
          channelKey: takeBacks.channelKey,
          pending: sql<number>`count(*)::int`,
          // Whole ms, as a Date of the row has it (`extract` is exact: numeric).
          oldestAt: sql<number>`floor(extract(epoch from min(${takeBacks.createdAt})) * 1000)::float8`,
          oldestKind: sql<
            Row['kind']
          >`(array_agg(${takeBacks.kind} order by ${takeBacks.createdAt}, ${takeBacks.id}))[1]`,
        })
        .from(takeBacks)
        .where(
          and(
            sql`${takeBacks.status} = 'pending'`,
            channelKey === undefined ? undefined : eq(takeBacks.channelKey, channelKey),
          ),
        )
        .groupBy(takeBacks.channelKey)
        // Byte order, as the in-memory log sorts, whatever the database's collation.
        .orderBy(sql`${takeBacks.channelKey} collate "C"`);
      return rows.map((r) => ({
        channelKey: r.channelKey,
        pending: Number(r.pending),
        oldest: { kind: r.oldestKind, createdAt: Number(r.oldestAt) },
      }));
    });
  }
}

function idOf(id: string): number | null {
  return /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : null;
}

function toTakeBack(row: Row): TakeBack {
  return {
    id: String(row.id),
    channelKey: row.channelKey,
    mark: row.mark,
    kind: row.kind,
    ranges: row.ranges,
    platformMessageIds: row.platformMessageIds,
    status: row.status,
    createdAt: row.createdAt.getTime(),
    attempts: row.attempts,
  };
}
