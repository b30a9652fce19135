/** The run statuses every store and the worker treat alike. */
import type { RunStatus } from '../ports/ports.js';

/** Statuses that stamp `finishedAt`. */
export const FINISHED_RUN_STATUSES: ReadonlySet<RunStatus> = new Set([
  'completed',
  'failed',
  'stale',
  'skipped',
]);

/** Statuses a run never leaves: its job is done for good, and `start` on it changes nothing. */
export const TERMINAL_RUN_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'stale']);
