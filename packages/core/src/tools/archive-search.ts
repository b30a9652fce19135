/**
 * Recall from a channel's archive: the port the `search_history` and `read_history` tools read
 * through, and the rules every implementation shares (the Postgres one and the in-memory one the
 * unit tests use), so both find, filter and cap alike.
 *
 * Every call names its channel and sees only that channel's messages: a model in one channel can
 * never read another's archive, whatever it asks for.
 */
import type { StoredMessage } from '../model/model.js';

export interface HistoryQuery {
  /**
   * Words to find (web-search syntax: every word must appear, `"a phrase"`, `a or b`, `-word`).
   * Any text is safe: nothing in it is ever read as SQL or raises a syntax error.
   */
  readonly text: string;
  /** Lowest seq to consider (inclusive). */
  readonly fromSeq?: number;
  /** Highest seq to consider (inclusive). */
  readonly toSeq?: number;
  /** Only messages by this author (case-insensitive). */
  readonly author?: string;
  /** At most this many messages. */
  readonly limit: number;
}

export interface ArchiveSearch {
  /**
   * The channel's archived messages that match, best first: among the newest
   * `ARCHIVE_SEARCH.candidates` matches, the most relevant, ties newest first. Whole texts.
   */
  search(channelKey: string, query: HistoryQuery): Promise<StoredMessage[]>;
  /** The channel's archived messages fromSeq..toSeq in seq order, at most `limit` of them. Whole texts. */
  read(channelKey: string, fromSeq: number, toSeq: number, limit: number): Promise<StoredMessage[]>;
}

/** The names of the built-in tools over the archive. */
export const HISTORY_TOOL_NAMES = ['search_history', 'read_history'] as const;

export const ARCHIVE_SEARCH = {
  /**
   * Matches ranked per search: the newest this many, then the most relevant of them. Ranking every
   * match of a common word in a million-message channel costs a read of tens of thousands of rows;
   * the newest few hundred cost the same whatever the word (see BENCHMARKS.md, search-history).
   */
  candidates: 200,
  /** Characters of a query that are searched; a longer one is cut here (the tools refuse it). */
  maxQueryChars: 500,
  /**
   * Characters of a message that are indexed. Postgres refuses a `tsvector` above 1 MB, which a
   * multi-megabyte tool result could reach, and an index that raises would fail the append. 100,000
   * characters stay far below that limit; words past them in a giant message are not found by search
   * (read_history still returns the whole text).
   */
  indexedChars: 100_000,
  /** Seqs are Postgres `integer`s: anything above is no seq and must not reach a query. */
  maxSeq: 2_147_483_647,
} as const;

/**
 * Results of the history tools themselves are never found by a search: they quote archived
 * messages, which are found on their own, and finding them would return each quote again, growing
 * with every search. A tool result's author is the tool's name.
 */
export function isSearchedMessage(message: Pick<StoredMessage, 'role' | 'author'>): boolean {
  return !(message.role === 'tool' && (HISTORY_TOOL_NAMES as readonly string[]).includes(message.author));
}

/** The query text as it is searched: NUL (which Postgres text cannot hold) dropped, cut to length. */
export function searchedQueryText(text: string): string {
  return text.replaceAll('\u0000', ' ').slice(0, ARCHIVE_SEARCH.maxQueryChars);
}
