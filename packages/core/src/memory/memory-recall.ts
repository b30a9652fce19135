/**
 * How memories are recalled, the same in every store (the Postgres store and the in-memory one rank
 * alike): the words a query is matched on, and how a match is ranked.
 */
import { FINGERPRINT_STOPWORDS } from './memory.js';

/**
 * How recall ranks a match: relevance × (`importanceBase` + importance) × recency, where recency
 * halves every `recencyHalfLifeDays` since the memory was last seen (extracted or refreshed). Shared
 * with the Postgres store so both rank alike.
 */
export const MEMORY_RECALL_RANKING = {
  importanceBase: 0.5,
  recencyHalfLifeDays: 30,
} as const;

/** Words of a recall query: letters and digits, lower-cased, at most this many. */
const MAX_RECALL_TERMS = 32;

/**
 * Words too common to tell memories apart (a subset of Postgres' English stop words): the
 * fingerprint's filler words and more. Unlike those, this list may grow: it only changes ranking.
 */
const RECALL_STOPWORDS: ReadonlySet<string> = new Set([
  ...FINGERPRINT_STOPWORDS,
  ...(
    'be been being am or but this these those by with from about as into than then so if not no do ' +
    'does did done has have had will would can could should i me my you your he him his she her it ' +
    'its we us our they them their what who whom which when where why how there here all any some'
  ).split(' '),
]);

/** The words of a text as recall compares them: split like `memoryFingerprint`, without stop words. */
export function recallTerms(text: string): string[] {
  const words = text
    .normalize('NFKC')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0 && !RECALL_STOPWORDS.has(w));
  return [...new Set(words)].slice(0, MAX_RECALL_TERMS);
}

/**
 * Distinct words a memory must share with the message that recalls it (fewer when the message has
 * fewer words): matching any one word, as recall once did, on chat traffic recalled a memory for every
 * "ubuntu" or "install", and the block of them, new at the end of every prompt, was most of what a
 * warm reply paid uncached.
 */
export const RECALL_MIN_SHARED_TERMS = 2;

/** Shorter words are no topic ("m", "ok", "2"): they do not count towards relevance. */
const MIN_TOPIC_LENGTH = 3;

/** Shortest word that may match another by prefix (`deploy` / `deployed` / `deploys`), as stemming would. */
const MIN_STEM_LENGTH = 5;

/** The words of a query a memory must share to be recalled (`topics`), and how many of them. */
export interface RecallBar {
  readonly topics: readonly string[];
  readonly needed: number;
}

/**
 * The bar for one query: its topic words (stop words and words of one or two characters aside), of
 * which a memory must share `minSharedTerms`, or all when the query has fewer. The one definition
 * `relevanceTo` and both stores share: the stores apply it before their limit, so a memory clearing
 * it is never cut by twenty that share one word and rank higher.
 */
export function recallBar(queryText: string, minSharedTerms: number = RECALL_MIN_SHARED_TERMS): RecallBar {
  const topics = recallTerms(queryText).filter((t) => t.length >= MIN_TOPIC_LENGTH);
  return { topics, needed: Math.min(minSharedTerms, topics.length) };
}

/**
 * How many of the bar's topic words a memory's words (`recallTerms` of its text) share. Words match
 * whole, or by a common prefix of at least five letters where one is a prefix of the other, close to
 * the Postgres store's English stemming without its dictionary.
 */
export function sharedTopics(bar: RecallBar, memoryWords: readonly string[]): number {
  const matches = (q: string) =>
    memoryWords.some(
      (m) =>
        m === q || (Math.min(m.length, q.length) >= MIN_STEM_LENGTH && (m.startsWith(q) || q.startsWith(m))),
    );
  return bar.topics.filter(matches).length;
}

/** Whether a memory's words clear the bar. A query without topic words recalls nothing. */
export function clearsRecallBar(bar: RecallBar, memoryWords: readonly string[]): boolean {
  return bar.topics.length > 0 && sharedTopics(bar, memoryWords) >= bar.needed;
}

/**
 * For one query, whether a memory shares enough distinct words with it to be worth a prompt's
 * tokens (`RECALL_MIN_SHARED_TERMS`, or every word of a shorter query: `recallBar`, matched as
 * `sharedTopics` does). The query's words are split once, for all the memories a recall tests.
 */
export function relevanceTo(queryText: string): (memoryText: string) => boolean {
  const bar = recallBar(queryText);
  return (memoryText) => clearsRecallBar(bar, recallTerms(memoryText));
}
