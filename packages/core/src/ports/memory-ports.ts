/** The typed memories a pass extracts and a turn recalls. */
import type { Memory, NewMemory } from '../memory/memory.js';

export interface MemoryUpsertResult {
  /** New memories. */
  readonly added: number;
  /** Existing memories (same fingerprint in the scope) refreshed instead of duplicated. */
  readonly refreshed: number;
}

export interface MemoryQuery {
  /** The scopes the asking channel belongs to; nothing outside them is ever returned. */
  readonly scopes: readonly string[];
  readonly text: string;
  readonly limit: number;
  /**
   * Distinct topic words of `text` (`recallBar`) a memory must share to be recalled, or all of them
   * when `text` has fewer; applied before `limit`, so memories that share one word cannot crowd out
   * one that shares more. Absent: any one word of `text` is enough.
   */
  readonly minSharedTerms?: number;
}

/** Memories by where they came from (`channelKey`), who they are about, and where they may be recalled. */
export interface MemoryFilter {
  readonly channelKey?: string;
  readonly speaker?: string;
  readonly scope?: string;
}

export interface MemoryListOptions {
  /** `id` (the default): oldest first; `importance`: the most important first, then by id. */
  readonly order?: 'id' | 'importance';
  readonly limit?: number;
}

export interface MemoryStore {
  upsert(memories: readonly NewMemory[]): Promise<MemoryUpsertResult>;
  /** Full-text search ranked by relevance, importance and recency. */
  recall(query: MemoryQuery): Promise<Memory[]>;
  /** The memories the filter selects: by id, or the most important first; at most `limit`. */
  list(filter: MemoryFilter, options?: MemoryListOptions): Promise<Memory[]>;
  /** How many memories the filter selects, without reading them. */
  count(filter: MemoryFilter): Promise<number>;
  /** Deletes by id; returns how many went. */
  forget(ids: readonly string[]): Promise<number>;
}
