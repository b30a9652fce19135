/**
 * The in-memory stores: the reference implementations the contract suites hold the Postgres stores
 * to, and the unit tests' stores; and `RecordingLogger`, the tests' logger that keeps its lines. Not part of `@ebb/core`'s public index: only tests import
 * `@ebb/core/testing` (the lint's dependency check says so).
 */
export * from './in-memory-archive-search.js';
export * from './in-memory-channel-store.js';
export * from './in-memory-memory-store.js';
export * from './in-memory-run-store.js';
export * from './in-memory-take-back-log.js';
export * from './in-memory-usage-store.js';
export * from './recording-logger.js';
