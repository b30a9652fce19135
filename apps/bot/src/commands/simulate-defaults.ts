/** `ebb simulate`'s defaults, apart from the command so `ebb --help` can print them without loading it. */

/** Turns a compaction pass takes in a simulation unless --job-latency or --job-seconds says otherwise. */
export const DEFAULT_JOB_LATENCY = 2;
