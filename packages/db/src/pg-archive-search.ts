/**
 * `ArchiveSearch` on Postgres (or PGlite): full-text search over the `messages.search` tsvector
 * (migration 0002, GIN index), only ever within the asked channel.
 *
 * Text-search configuration: `english`, as memories use. Stemming lets "deploy" find "deployed" (the
 * model guesses at wording it no longer sees), and dropping stop words keeps "the", "is", "it" from
 * matching half the archive. The default parser keeps paths, hosts, versions and `foo-bar` whole
 * (and their parts), so commands and identifiers are found as typed. `simple` would match words
 * exactly, but "deploying" would miss "deployed", and stop words would turn every search into a scan.
 *
 * Query syntax: `websearch_to_tsquery`, made for raw user input: it never raises a syntax error,
 * whatever the text holds (quotes, `&|!():*`, backslashes), so the model's query is passed as one
 * bound parameter and never read as tsquery syntax. Words are and-ed; `"a phrase"`, `a or b` and
 * `-word` work as on web search engines. A query with no positive word (only stop words, only
 * `-word`) finds nothing rather than everything.
 *
 * Ranking: the newest `ARCHIVE_SEARCH.candidates` matches, then by `ts_rank` (normalization 1:
 * divided by 1 + log of the message's length, so a long tool output that repeats a word does not
 * outrank the short message that said it), ties newest first. Ranking every match is unbounded: a
 * common word matches tens of thousands of messages in a million, and reading them all took
 * 175–210 ms. The candidates are found newest first, each step bounded (BENCHMARKS.md,
 * search-history): a walk down the newest 4,000 messages testing each row (a common word is done
 * there); a longer walk when how often those matched says the rest is near; otherwise the GIN index,
 * window by window, which is what a rare word costs anyway.
 */
import {
  ARCHIVE_SEARCH,
  type ArchiveSearch,
  HISTORY_TOOL_NAMES,
  type HistoryQuery,
  type StoredMessage,
  searchedQueryText,
  type ToolCall,
} from '@ebb/core';
import { and, asc, between, eq, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { dbCall } from './pg-errors.js';
import { rowsOf, withoutNulls } from './rows.js';
import { messages } from './schema.js';

/**
 * Sizes of the seq windows a search walks, newest first; the last window is the rest of the range.
 * Each is ten times the one before: a word is looked for among ten times more messages only when
 * the newer ones held too few matches, so the rows read stay near `candidates` / frequency.
 */
export const SEARCH_WINDOWS = [4_000, 40_000, 400_000] as const;

/**
 * Walking the newest messages, testing each row's stored tsvector: `first` messages always (a few
 * milliseconds whatever the word), then up to `more` when how often those matched says the rest of
 * the candidates lie within reach; beyond that, the GIN index.
 */
export const SEARCH_WALK = { first: 4_000, more: 20_000 } as const;

const storedColumns = {
  seq: messages.seq,
  role: messages.role,
  author: messages.author,
  text: messages.content,
  tokens: messages.tokens,
  ts: messages.ts,
  toolCalls: messages.toolCalls,
  toolCallId: messages.toolCallId,
};

/** What every statement of one search shares: the channel and filters, and the parsed query. */
interface SearchScope {
  readonly where: SQL;
  readonly tsquery: SQL;
}

interface SearchRow {
  seq: number;
  role: StoredMessage['role'];
  author: string;
  text: string;
  tokens: number;
  ts: string | null;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
}

export class PgArchiveSearch implements ArchiveSearch {
  readonly #db: EbbDatabase;

  constructor(options: PgStoreOptions) {
    this.#db = options.db;
  }

  search(channelKey: string, query: HistoryQuery): Promise<StoredMessage[]> {
    return dbCall('searchArchive', async () => {
      const text = searchedQueryText(query.text);
      if (query.limit <= 0 || text.trim() === '') return [];
      const [head] = await this.#db
        .select({ seq: sql<number | null>`max(${messages.seq})` })
        .from(messages)
        .where(eq(messages.channelKey, channelKey));
      const lo = Math.max(1, query.fromSeq ?? 1);
      const hi = Math.min(head?.seq ?? 0, query.toSeq ?? ARCHIVE_SEARCH.maxSeq);
      if (lo > hi) return [];

      // Inline, not a CTE: the planner sees the parsed query, so it knows how common its words are.
      const tsquery = sql`websearch_to_tsquery('english'::regconfig, ${text})`;
      const filters: SQL[] = [
        sql`channel_key = ${channelKey}`,
        // A query with nothing to look up in the index (only stop words, only -word) finds nothing.
        sql`querytree(${tsquery}) not in ('', 'T')`,
        sql`not (role = 'tool' and author in (${sql.join(
          HISTORY_TOOL_NAMES.map((n) => sql`${n}`),
          sql`, `,
        )}))`,
      ];
      if (query.author !== undefined) filters.push(sql`lower(author) = lower(${query.author})`);
      const scope = { where: sql.join(filters, sql` and `), tsquery };

      const want = ARCHIVE_SEARCH.candidates;
      const firstLo = Math.max(lo, hi - SEARCH_WALK.first + 1);
      const seqs = await this.#walk(scope, firstLo, hi, want);
      let next = firstLo - 1;
      if (seqs.length < want && next >= lo && seqs.length > 0) {
        // How often the newest messages matched says how far on the rest is likely to be.
        const expected = Math.ceil(((want - seqs.length) * (hi - firstLo + 1)) / seqs.length);
        if (expected <= SEARCH_WALK.more / 2) {
          const walkLo = Math.max(lo, next - 2 * expected + 1);
          seqs.push(...(await this.#walk(scope, walkLo, next, want - seqs.length)));
          next = walkLo - 1;
        }
      }
      if (seqs.length < want && next >= lo) {
        seqs.push(...(await this.#indexed(scope, lo, next, want - seqs.length)));
      }
      if (seqs.length === 0) return [];

      const result = await this.#db.execute(sql`
        select seq, role, author, content as text, tokens, ts, tool_calls, tool_call_id
        from ${messages}
        where channel_key = ${channelKey} and seq = any(${`{${seqs.join(',')}}`}::int[])
        order by ts_rank(search, ${tsquery}, 1) desc, seq desc
        limit ${query.limit}`);
      return rowsOf<SearchRow>(result).map(toStored);
    });
  }

  /**
   * The newest matches in from..to by walking the messages down from `to`, testing each. The
   * function form of `@@` (`ts_match_vq`) is no indexable operator, so the planner cannot swap the
   * walk for the GIN index, whose whole posting list it would read (8 ms for a word in 2.4% of a
   * million messages) to find what a walk of a few thousand rows finds (~0.6 µs a row).
   */
  async #walk(scope: SearchScope, from: number, to: number, limit: number): Promise<number[]> {
    const result = await this.#db.execute(sql`
      select seq from ${messages}
      where ${scope.where} and ts_match_vq(search, ${scope.tsquery}) and seq between ${from} and ${to}
      order by seq desc limit ${limit}`);
    return rowsOf<{ seq: number }>(result).map((r) => Number(r.seq));
  }

  /**
   * The newest matches in from..to through the GIN index, for words too rare to walk for: window by
   * window (`SEARCH_WINDOWS`), in one statement whose limit stops at the first window that fills it.
   * Each window's plan is bounded whichever way the planner picks (its seqs, the index, or both).
   */
  async #indexed(scope: SearchScope, from: number, to: number, limit: number): Promise<number[]> {
    const windows = seqWindows(from, to).map(
      ([lo, hi]) => sql`(select seq from ${messages}
        where ${scope.where} and search @@ ${scope.tsquery} and seq between ${lo} and ${hi}
        order by seq desc)`,
    );
    // Append runs its branches in order and the limit stops it.
    const result = await this.#db.execute(
      sql`select seq from (${sql.join(windows, sql` union all `)}) w limit ${limit}`,
    );
    return rowsOf<{ seq: number }>(result).map((r) => Number(r.seq));
  }

  read(channelKey: string, fromSeq: number, toSeq: number, limit: number): Promise<StoredMessage[]> {
    return dbCall('readArchivePage', async () => {
      if (limit <= 0 || fromSeq > toSeq) return [];
      const rows = await this.#db
        .select(storedColumns)
        .from(messages)
        .where(and(eq(messages.channelKey, channelKey), between(messages.seq, fromSeq, toSeq)))
        .orderBy(asc(messages.seq))
        .limit(limit);
      return rows.map((r): StoredMessage => withoutNulls(r));
    });
  }
}

/** lo..hi cut into `SEARCH_WINDOWS`, newest first; the last one reaches down to lo. */
export function seqWindows(lo: number, hi: number): [number, number][] {
  const windows: [number, number][] = [];
  let to = hi;
  for (const size of SEARCH_WINDOWS) {
    if (to - size < lo) break;
    windows.push([to - size + 1, to]);
    to -= size;
  }
  windows.push([lo, to]);
  return windows;
}

function toStored(row: SearchRow): StoredMessage {
  return withoutNulls({
    seq: Number(row.seq),
    role: row.role,
    author: row.author,
    text: row.text,
    tokens: Number(row.tokens),
    ts: row.ts,
    toolCalls: row.tool_calls,
    toolCallId: row.tool_call_id,
  });
}
