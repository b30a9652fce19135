/** What the stores are written against, and the options every `Pg*` store is built from. */
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';

/** What the stores are written against: either driver. */
export type EbbDatabase = PgDatabase<PgQueryResultHKT>;

export interface PgStoreOptions {
  readonly db: EbbDatabase;
}
