export * from './create-db.js';
export * from './pg-archive-search.js';
export * from './pg-channel-store.js';
export * from './pg-errors.js';
export * from './pg-memory-store.js';
export * from './pg-run-store.js';
export * from './pglite-template.js';
export * from './rows.js';
export * as schema from './schema.js';
