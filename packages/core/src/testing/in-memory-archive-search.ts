/**
 * `ArchiveSearch` by scanning a channel store's archive in memory, for tests: the same contract as
 * `PgArchiveSearch` (one suite runs against both). Its word matching is a crude stand-in for
 * Postgres' English text search: lower-cased letter/digit words, Postgres' English stop words
 * dropped, a few English suffixes stripped; `"phrases"` match as their words, in any order.
 */

import type { StoredMessage } from '../model/model.js';
import type { ArchiveReader } from '../ports/ports.js';
import {
  ARCHIVE_SEARCH,
  type ArchiveSearch,
  type HistoryQuery,
  isSearchedMessage,
  searchedQueryText,
} from '../tools/archive-search.js';

/** Postgres' `english` stop words (snowball's list): never indexed, never searched. */
const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her ' +
    'hers herself it its itself they them their theirs themselves what which who whom this that these ' +
    'those am is are was were be been being have has had having do does did doing a an the and but if ' +
    'or because as until while of at by for with about against between into through during before after ' +
    'above below to from up down in out on off over under again further then once here there when where ' +
    'why how all any both each few more most other some such no nor not only own same so than too very ' +
    's t can will just don should now'
  ).split(' '),
);

/** One `or`-group of a query: a message matches when it holds any of the words. */
type Clause = { readonly any: readonly string[]; readonly negated: boolean };

export class InMemoryArchiveSearch implements ArchiveSearch {
  readonly #channels: Pick<ArchiveReader, 'readArchive'>;

  constructor(channels: Pick<ArchiveReader, 'readArchive'>) {
    this.#channels = channels;
  }

  async search(channelKey: string, query: HistoryQuery): Promise<StoredMessage[]> {
    const clauses = parseQuery(searchedQueryText(query.text));
    if (query.limit <= 0 || !clauses.some((c) => !c.negated)) return [];
    const archive = await this.#channels.readArchive(
      channelKey,
      query.fromSeq ?? 1,
      query.toSeq ?? ARCHIVE_SEARCH.maxSeq,
    );
    const author = query.author?.toLowerCase();
    const matches: { message: StoredMessage; score: number }[] = [];
    // Newest first, as the Postgres store picks its candidates.
    for (let i = archive.length - 1; i >= 0 && matches.length < ARCHIVE_SEARCH.candidates; i--) {
      const message = archive[i] as StoredMessage;
      if (!isSearchedMessage(message)) continue;
      if (author !== undefined && message.author.toLowerCase() !== author) continue;
      const score = scoreOf(clauses, wordsOf(searchedText(message)));
      if (score > 0) matches.push({ message, score });
    }
    // Stable: equal scores keep newest first.
    matches.sort((a, b) => b.score - a.score);
    return matches.slice(0, query.limit).map((m) => m.message);
  }

  async read(channelKey: string, fromSeq: number, toSeq: number, limit: number): Promise<StoredMessage[]> {
    if (limit <= 0 || fromSeq > toSeq) return [];
    const archive = await this.#channels.readArchive(channelKey, fromSeq, toSeq);
    return archive.slice(0, limit);
  }
}

/** What a search looks in: the text's first `indexedChars`, and tool calls' names and arguments. */
function searchedText(message: StoredMessage): string {
  const calls = (message.toolCalls ?? []).map((c) => `${c.id} ${c.name} ${c.arguments}`);
  return [message.text.slice(0, ARCHIVE_SEARCH.indexedChars), ...calls].join(' ');
}

/** Words as the index keeps them: lower case, no stop words, crudely stemmed. */
function wordsOf(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !ENGLISH_STOPWORDS.has(w))
    .map(stem);
}

function stem(word: string): string {
  for (const suffix of ['ing', 'ed', 'es', 's']) {
    if (word.length - suffix.length >= 3 && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  }
  return word;
}

/**
 * Web-search syntax, roughly as `websearch_to_tsquery` reads it: words are and-ed, `or` between two
 * words makes them alternatives, `-word` excludes, quotes group words (matched here in any order).
 */
function parseQuery(text: string): Clause[] {
  const clauses: Clause[] = [];
  let pendingOr = false;
  for (const raw of text.match(/-?"[^"]*"?|\S+/g) ?? []) {
    const negated = raw.startsWith('-');
    if (!negated && raw.toLowerCase() === 'or') {
      pendingOr = clauses.length > 0;
      continue;
    }
    const words = wordsOf(raw);
    if (words.length === 0) continue;
    const last = clauses.at(-1);
    if (pendingOr && last && !last.negated && !negated && words.length === 1) {
      clauses[clauses.length - 1] = { any: [...last.any, ...words], negated: false };
    } else {
      for (const word of words) clauses.push({ any: [word], negated });
    }
    pendingOr = false;
  }
  return clauses;
}

/**
 * 0 when the message does not match; otherwise roughly as `ts_rank` (normalization 1) scores it: each
 * query word adds 1 + 1/4 + 1/9 … for its occurrences (a repeat counts less than the first), averaged
 * over the query's words, divided by 1 + log of the message's length in words.
 */
function scoreOf(clauses: readonly Clause[], words: readonly string[]): number {
  let sum = 0;
  let queried = 0;
  for (const clause of clauses) {
    let found = 0;
    for (const word of clause.any) {
      const count = words.filter((w) => w === word).length;
      found += count;
      for (let k = 1; k <= count; k++) sum += 1 / (k * k);
    }
    if (clause.negated ? found > 0 : found === 0) return 0;
    if (!clause.negated) queried += clause.any.length;
  }
  return sum / queried / (1 + Math.log(words.length));
}
