/**
 * The memory store in memory, for tests: the same semantics as `PgMemoryStore` (one contract suite
 * runs against both), no I/O. Recall ranks like Postgres (`memory-recall.ts`); its word matching is
 * a crude stand-in for Postgres' stemming, and with `minSharedTerms` the bar's own (`sharedTopics`).
 */
import { type Memory, memoryFingerprint, type NewMemory } from '../memory/memory.js';
import {
  clearsRecallBar,
  MEMORY_RECALL_RANKING,
  type RecallBar,
  recallBar,
  recallTerms,
  sharedTopics,
} from '../memory/memory-recall.js';
import { planMemoryUpsert } from '../memory/plan-memory-upsert.js';
import type {
  MemoryFilter,
  MemoryListOptions,
  MemoryQuery,
  MemoryStore,
  MemoryUpsertResult,
} from '../ports/ports.js';

export interface InMemoryStoreOptions {
  /** Milliseconds since the epoch; recall's recency is measured with it. */
  readonly now?: () => number;
}

const DAY_MS = 86_400_000;

interface StoredMemory {
  memory: Memory;
  readonly channelKey: string;
  /** Lower-cased words of the text, for recall. */
  readonly words: readonly string[];
  lastSeenAt: number;
}

export class InMemoryMemoryStore implements MemoryStore {
  readonly #now: () => number;
  /** By id, in insertion order (ids count up). */
  readonly #byId = new Map<string, StoredMemory>();
  /** Id by scope and fingerprint. */
  readonly #byFingerprint = new Map<string, string>();
  #nextId = 1;

  constructor(options: InMemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async upsert(memories: readonly NewMemory[]): Promise<MemoryUpsertResult> {
    let added = 0;
    const now = this.#now();
    for (const { memory: m, fingerprint } of planMemoryUpsert(memories)) {
      const key = `${m.scope}\u0000${fingerprint}`;
      const id = this.#byFingerprint.get(key);
      const stored = id === undefined ? undefined : this.#byId.get(id);
      if (stored) {
        // The first text stays; a refresh only raises the importance and the last sighting.
        stored.memory = { ...stored.memory, importance: Math.max(stored.memory.importance, m.importance) };
        stored.lastSeenAt = now;
        continue;
      }
      const newId = String(this.#nextId++);
      this.#byId.set(newId, {
        memory: {
          id: newId,
          type: m.type,
          text: m.text,
          importance: m.importance,
          ...(m.speaker === undefined ? {} : { speaker: m.speaker }),
          scope: m.scope,
          fromSeq: m.fromSeq,
          toSeq: m.toSeq,
        },
        channelKey: m.channelKey,
        words: recallTerms(m.text),
        lastSeenAt: now,
      });
      this.#byFingerprint.set(key, newId);
      added++;
    }
    return { added, refreshed: memories.length - added };
  }

  async recall(query: MemoryQuery): Promise<Memory[]> {
    const terms = recallTerms(query.text);
    if (terms.length === 0 || query.limit <= 0) return [];
    const bar = query.minSharedTerms === undefined ? undefined : recallBar(query.text, query.minSharedTerms);
    const scopes = new Set(query.scopes);
    const now = this.#now();
    const { importanceBase, recencyHalfLifeDays } = MEMORY_RECALL_RANKING;
    const ranked: { memory: Memory; score: number; order: number }[] = [];
    let order = 0;
    for (const stored of this.#byId.values()) {
      order++;
      if (!scopes.has(stored.memory.scope)) continue;
      const matches = relevance(stored.words, terms, bar);
      if (matches === 0) continue;
      const ageDays = Math.max(0, now - stored.lastSeenAt) / DAY_MS;
      const recency = 0.5 ** (ageDays / recencyHalfLifeDays);
      const score = matches * (importanceBase + stored.memory.importance) * recency;
      ranked.push({ memory: stored.memory, score, order });
    }
    ranked.sort((a, b) => b.score - a.score || a.order - b.order);
    return ranked.slice(0, query.limit).map((r) => r.memory);
  }

  async list(filter: MemoryFilter, options: MemoryListOptions = {}) {
    const out = this.#selected(filter);
    if (options.order === 'importance') out.sort((a, b) => b.importance - a.importance);
    return options.limit === undefined ? out : out.slice(0, options.limit);
  }

  async count(filter: MemoryFilter) {
    return this.#selected(filter).length;
  }

  /** By id: ids are given in order, and the map keeps insertion order. */
  #selected(filter: MemoryFilter): Memory[] {
    const out: Memory[] = [];
    for (const stored of this.#byId.values()) {
      if (filter.channelKey !== undefined && stored.channelKey !== filter.channelKey) continue;
      if (filter.speaker !== undefined && stored.memory.speaker !== filter.speaker) continue;
      if (filter.scope !== undefined && stored.memory.scope !== filter.scope) continue;
      out.push(stored.memory);
    }
    return out;
  }

  async forget(ids: readonly string[]): Promise<number> {
    let removed = 0;
    for (const id of new Set(ids)) {
      const stored = this.#byId.get(id);
      if (!stored) continue;
      this.#byId.delete(id);
      this.#byFingerprint.delete(
        `${stored.memory.scope}\u0000${memoryFingerprint(stored.memory.type, stored.memory.text)}`,
      );
      removed++;
    }
    return removed;
  }
}

/**
 * How many words of the query a memory shares, 0 for no match: with a bar, its topic words as the bar
 * counts them, and 0 below it (so the limit applies to memories that clear it, as in Postgres).
 */
function relevance(words: readonly string[], terms: readonly string[], bar: RecallBar | undefined): number {
  if (bar) return clearsRecallBar(bar, words) ? sharedTopics(bar, words) : 0;
  return terms.filter((t) => words.some((w) => matchesTerm(w, t))).length;
}

/**
 * A memory word matches a query term when it is the term or the term plus an inflection ("prefers"
 * for "prefer"), a crude stand-in for the stemming Postgres full-text search does.
 */
function matchesTerm(word: string, term: string): boolean {
  if (word === term) return true;
  if (term.length < 3 || !word.startsWith(term)) return false;
  return ['s', 'es', 'ed', 'ing', 'd'].includes(word.slice(term.length));
}
