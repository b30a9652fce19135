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
 * 175–210 ms. The candidates come from windows of seqs, newest first (`SEARCH_WINDOWS`), in one
 * statement whose `limit` stops at the first window that fills it: a common word is found among the
 * newest few thousand messages, a rare one costs what its few index entries cost, and each window's
 * plan is bounded whichever way the planner picks (walking the window's seqs, or the GIN index).
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
import type { EbbDatabase } from './create-db.js';
import type { PgStoreOptions } from './pg-channel-store.js';
import { dbCall } from './pg-errors.js';
import { rowsOf, withoutNulls } from './rows.js';
import { messages } from './schema.js';

/**
 * Sizes of the seq windows a search walks, newest first; the last window is the rest of the range.
 * Each is ten times the one before: a word is looked for among ten times more messages only when
 * the newer ones held too few matches, so the rows read stay near `candidates` / frequency.
 */
export const SEARCH_WINDOWS = [4_000, 40_000, 400_000] as const;

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
        sql`search @@ ${tsquery}`,
        // A query with nothing to look up in the index (only stop words, only -word) finds nothing.
        sql`querytree(${tsquery}) not in ('', 'T')`,
        sql`not (role = 'tool' and author in (${sql.join(
          HISTORY_TOOL_NAMES.map((n) => sql`${n}`),
          sql`, `,
        )}))`,
      ];
      if (query.author !== undefined) filters.push(sql`lower(author) = lower(${query.author})`);
      const where = sql.join(filters, sql` and `);
      const windows = seqWindows(lo, hi).map(
        ([from, to]) => sql`(select seq from ${messages}
          where ${where} and seq between ${from} and ${to} order by seq desc)`,
      );
      // Append runs its branches in order and the limit stops it: older windows are read only when
      // the newer ones held fewer than `candidates` matches.
      const result = await this.#db.execute(sql`
        select m.seq, m.role, m.author, m.content as text, m.tokens, m.ts, m.tool_calls, m.tool_call_id
        from (select seq from (${sql.join(windows, sql` union all `)}) w limit ${ARCHIVE_SEARCH.candidates}) c
        join ${messages} m on m.channel_key = ${channelKey} and m.seq = c.seq
        order by ts_rank(m.search, ${tsquery}, 1) desc, m.seq desc
        limit ${query.limit}`);
      return rowsOf<SearchRow>(result).map(toStored);
    });
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
