/**
 * `TakeBackLog` in memory, for tests: the same semantics as `PgTakeBackLog` (one contract suite runs
 * against both). `InMemoryChannelStore` owns one and records into it from `redactArchive` and
 * `editMessage`, as Postgres records in their transaction.
 */
import type { SeqRange } from '../model/model.js';
import {
  type NewTakeBack,
  type PendingTakeBacks,
  type TakeBack,
  type TakeBackCounts,
  takenBackOver,
} from '../plans/take-back.js';
import type { TakeBackLog } from '../ports/ports.js';

interface Row extends TakeBack {
  claimedUntil: number;
  attempts: number;
  status: 'pending' | 'completed';
  counts?: TakeBackCounts;
  error?: string;
}

export class InMemoryTakeBackLog implements TakeBackLog {
  readonly #rows: Row[] = [];
  readonly #marks = new Map<string, number>();
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** Records a take-back and moves the channel's mark: the store's half of its write. */
  record(channelKey: string, takeBack: NewTakeBack): TakeBack {
    const mark = (this.#marks.get(channelKey) ?? 0) + 1;
    this.#marks.set(channelKey, mark);
    const row: Row = {
      kind: takeBack.kind,
      ranges: takeBack.ranges.map((r) => ({ fromSeq: r.fromSeq, toSeq: r.toSeq })),
      platformMessageIds: [...takeBack.platformMessageIds],
      id: String(this.#rows.length + 1),
      channelKey,
      mark,
      status: 'pending',
      createdAt: this.#now(),
      attempts: 0,
      claimedUntil: 0,
    };
    this.#rows.push(row);
    return publicOf(row);
  }

  /** The channel's take-backs since `mark` over `range`, synchronously (the channel store's splice). */
  since(channelKey: string, mark: number, range: SeqRange): TakeBack[] {
    return this.#rows
      .filter((r) => r.channelKey === channelKey && takenBackOver([r], mark, range))
      .map(publicOf);
  }

  async takeBackMark(channelKey: string): Promise<number> {
    return this.#marks.get(channelKey) ?? 0;
  }

  async takenBackSince(channelKey: string, mark: number, range: SeqRange): Promise<TakeBack[]> {
    return this.since(channelKey, mark, range);
  }

  async recordTakeBack(channelKey: string, takeBack: NewTakeBack): Promise<TakeBack> {
    return this.record(channelKey, takeBack);
  }

  async claimTakeBacks(options: {
    readonly limit: number;
    readonly leaseMs: number;
    readonly id?: string;
  }): Promise<TakeBack[]> {
    const now = this.#now();
    const claimed = this.#rows
      .filter((r) => r.status === 'pending' && r.claimedUntil <= now)
      .filter((r) => options.id === undefined || r.id === options.id)
      .slice(0, Math.max(0, options.limit));
    for (const row of claimed) {
      row.claimedUntil = now + options.leaseMs;
      row.attempts++;
    }
    return claimed.map(publicOf);
  }

  async renewTakeBack(id: string, leaseMs: number): Promise<void> {
    const row = this.#rows.find((r) => r.id === id);
    if (row?.status === 'pending') row.claimedUntil = this.#now() + leaseMs;
  }

  async finishTakeBack(
    id: string,
    outcome: { readonly counts: TakeBackCounts } | { readonly error: string },
  ): Promise<void> {
    const row = this.#rows.find((r) => r.id === id);
    if (!row || row.status === 'completed') return;
    if ('counts' in outcome) {
      row.status = 'completed';
      row.counts = outcome.counts;
      delete row.error;
    } else {
      row.error = outcome.error;
      row.claimedUntil = 0;
    }
  }

  async pendingTakeBacks(channelKey?: string): Promise<TakeBack[]> {
    return this.#rows
      .filter((r) => r.status === 'pending' && (channelKey === undefined || r.channelKey === channelKey))
      .map(publicOf);
  }

  async pendingTakeBackCounts(channelKey?: string): Promise<PendingTakeBacks[]> {
    const byChannel = new Map<string, PendingTakeBacks>();
    // Rows are kept in the order they were recorded: the first of a channel is its oldest.
    for (const row of await this.pendingTakeBacks(channelKey)) {
      const seen = byChannel.get(row.channelKey);
      byChannel.set(row.channelKey, {
        channelKey: row.channelKey,
        pending: (seen?.pending ?? 0) + 1,
        oldest: seen?.oldest ?? { kind: row.kind, createdAt: row.createdAt },
      });
    }
    return [...byChannel.values()].sort((a, b) => (a.channelKey < b.channelKey ? -1 : 1));
  }
}

function publicOf(row: Row): TakeBack {
  const { claimedUntil: _c, counts: _n, error: _e, ...takeBack } = row;
  return { ...takeBack };
}
