/**
 * `MemoryStore` on Postgres (or PGlite). A memory is identified in its scope by its fingerprint, so
 * a retried or near-duplicate extraction refreshes the stored row (importance raised, last seen now,
 * first text kept) instead of adding one. Recall is full-text search over a generated `tsvector`
 * column (GIN index), only within the asked scopes, ranked like the in-memory store: relevance ×
 * (0.5 + importance) × recency; with `minSharedTerms`, only memories clearing the recall bar are
 * ranked, so the limit never cuts one that clears it for others that share a single word.
 */
import {
  MEMORY_RECALL_RANKING,
  type Memory,
  type MemoryFilter,
  type MemoryListOptions,
  type MemoryQuery,
  type MemoryStore,
  type MemoryUpsertResult,
  type NewMemory,
  planMemoryUpsert,
  type RecallBar,
  recallBar,
  recallTerms,
} from '@ebb/core';
import { and, asc, desc, eq, inArray, type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { dbCall } from './pg-errors.js';
import { memories } from './schema.js';

const DAY_SECONDS = 86_400;

const memoryColumns = {
  id: memories.id,
  type: memories.type,
  text: memories.text,
  importance: memories.importance,
  speaker: memories.speaker,
  scope: memories.scope,
  fromSeq: memories.fromSeq,
  toSeq: memories.toSeq,
};

type MemoryRow = Pick<typeof memories.$inferSelect, keyof typeof memoryColumns>;

export class PgMemoryStore implements MemoryStore {
  readonly #db: EbbDatabase;

  constructor(options: PgStoreOptions) {
    this.#db = options.db;
  }

  upsert(batch: readonly NewMemory[]): Promise<MemoryUpsertResult> {
    return dbCall('upsertMemories', async () => {
      if (batch.length === 0) return { added: 0, refreshed: 0 };
      // One row per (scope, fingerprint), as a statement may not update a row twice; in a fixed
      // order, so two concurrent upserts lock rows alike and cannot deadlock.
      const values = planMemoryUpsert(batch).map(({ memory: m, fingerprint }) => ({
        scope: m.scope,
        channelKey: m.channelKey,
        type: m.type,
        text: m.text,
        importance: m.importance,
        speaker: m.speaker ?? null,
        fromSeq: m.fromSeq,
        toSeq: m.toSeq,
        fingerprint,
      }));
      const result = await this.#db
        .insert(memories)
        .values(values)
        .onConflictDoUpdate({
          target: [memories.scope, memories.fingerprint],
          set: {
            importance: sql`greatest(${memories.importance}, excluded.importance)`,
            lastSeenAt: sql`now()`,
          },
        })
        // xmax is 0 on a row this statement inserted, and the locking transaction's id on one it updated.
        .returning({ inserted: sql<boolean>`(xmax = 0)` });
      const added = result.filter((r) => r.inserted).length;
      return { added, refreshed: batch.length - added };
    });
  }

  recall(query: MemoryQuery): Promise<Memory[]> {
    return dbCall('recallMemories', async () => {
      const terms = recallTerms(query.text);
      if (terms.length === 0 || query.scopes.length === 0 || query.limit <= 0) return [];
      const bar =
        query.minSharedTerms === undefined ? undefined : recallBar(query.text, query.minSharedTerms);
      // No topic words: nothing clears the bar (`clearsRecallBar`).
      if (bar?.topics.length === 0) return [];
      // Any of the words (OR), each through the English dictionary as the indexed text was.
      const tsquery = sql`to_tsquery('english', ${terms.map(quotedTerm).join(' | ')})`;
      const { importanceBase, recencyHalfLifeDays } = MEMORY_RECALL_RANKING;
      const ageDays = sql`extract(epoch from (now() - ${memories.lastSeenAt}))::float8 / ${DAY_SECONDS}::float8`;
      const score: SQL = sql`ts_rank(${memories.search}, ${tsquery})
        * (${importanceBase}::float8 + ${memories.importance})
        * power(0.5::float8, greatest(${ageDays}, 0) / ${recencyHalfLifeDays}::float8)`;
      const rows = await this.#db
        .select(memoryColumns)
        .from(memories)
        .where(
          and(
            inArray(memories.scope, [...query.scopes]),
            sql`${memories.search} @@ ${tsquery}`,
            // After the OR match the GIN index serves, on the few rows it finds.
            bar === undefined ? undefined : clearsBar(bar),
          ),
        )
        .orderBy(desc(score), asc(memories.id))
        .limit(query.limit);
      return rows.map(toMemory);
    });
  }

  list(filter: MemoryFilter, options: MemoryListOptions = {}) {
    return dbCall('listMemories', async () => {
      const order =
        options.order === 'importance' ? [desc(memories.importance), asc(memories.id)] : [asc(memories.id)];
      const query = this.#db
        .select(memoryColumns)
        .from(memories)
        .where(filterOf(filter))
        .orderBy(...order);
      const rows = await (options.limit === undefined ? query : query.limit(options.limit));
      return rows.map(toMemory);
    });
  }

  count(filter: MemoryFilter) {
    return dbCall('countMemories', async () => {
      const [row] = await this.#db
        .select({ n: sql<number>`count(*)::int` })
        .from(memories)
        .where(filterOf(filter));
      return row?.n ?? 0;
    });
  }

  forget(ids: readonly string[]): Promise<number> {
    return dbCall('forgetMemories', async () => {
      // Ids are bigints; anything else names no memory.
      const numeric = [...new Set(ids.filter((id) => /^[1-9][0-9]{0,17}$/.test(id)).map(Number))];
      if (numeric.length === 0) return 0;
      const deleted = await this.#db
        .delete(memories)
        .where(inArray(memories.id, numeric))
        .returning({ id: memories.id });
      return deleted.length;
    });
  }
}

/**
 * A row clears the bar when its `search` matches at least `needed` of the bar's topic words, each
 * through the English dictionary. Stemming is not quite `sharedTopics`' prefix rule (and a topic
 * that is a Postgres stop word matches nothing), so a caller that must agree with the in-memory store
 * still filters the result with `relevanceTo`: this bar only makes the limit count memories that can
 * pass that filter.
 */
function clearsBar(bar: RecallBar): SQL {
  const shared = bar.topics.map(
    (t) => sql`(${memories.search} @@ to_tsquery('english', ${quotedTerm(t)}))::int`,
  );
  return sql`(${sql.join(shared, sql` + `)}) >= ${bar.needed}::int`;
}

/** A recall word as one tsquery lexeme: letters and digits only (`recallTerms`), so quoting is safe. */
function quotedTerm(term: string): string {
  return `'${term}'`;
}

function filterOf(filter: MemoryFilter) {
  return and(
    filter.channelKey === undefined ? undefined : eq(memories.channelKey, filter.channelKey),
    filter.speaker === undefined ? undefined : eq(memories.speaker, filter.speaker),
    filter.scope === undefined ? undefined : eq(memories.scope, filter.scope),
  );
}

function toMemory(row: MemoryRow): Memory {
  return {
    id: String(row.id),
    type: row.type,
    text: row.text,
    importance: row.importance,
    ...(row.speaker === null ? {} : { speaker: row.speaker }),
    scope: row.scope,
    fromSeq: row.fromSeq,
    toSeq: row.toSeq,
  };
}
