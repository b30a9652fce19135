/**
 * The commands, each module loaded when its command runs: `ebb config check` should not pay for
 * loading discord.js, Bolt, BullMQ, PGlite and the compaction core (with all of them a cold start
 * took 1.7 s from the build, 0.4 s without). Same names and parameters as the modules' functions.
 */
export { DEFAULT_JOB_LATENCY } from './simulate-defaults.js';

/** A command (it returns an exit code) whose module is imported when it is first called. */
function lazy<A extends unknown[]>(
  load: () => Promise<(...args: A) => number | Promise<number>>,
): (...args: A) => Promise<number> {
  return async (...args) => (await load())(...args);
}

export const compact = lazy(async () => (await import('./compact.js')).compact);
export const configCheck = lazy(async () => (await import('./config-check.js')).configCheck);
export const demo = lazy(async () => (await import('./demo.js')).demo);
export const memoriesForget = lazy(async () => (await import('./memories.js')).memoriesForget);
export const memoriesList = lazy(async () => (await import('./memories.js')).memoriesList);
export const migrate = lazy(async () => (await import('./migrate.js')).migrate);
export const run = lazy(async () => (await import('./run.js')).run);
export const simulate = lazy(async () => (await import('./simulate.js')).simulate);
export const simulateArchive = lazy(async () => (await import('./simulate-archive.js')).simulateArchive);
export const status = lazy(async () => (await import('./status.js')).status);
export const transcript = lazy(async () => (await import('./transcript.js')).transcript);
export const worker = lazy(async () => (await import('./worker.js')).worker);
