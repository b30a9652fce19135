/**
 * The run store (and its checkpoint eraser) in memory, for tests: the same semantics as
 * `PgRunStore` (the same contract suites run against both), no I/O.
 */

import type { SeqRange } from '../model/model.js';
import { FINISHED_RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../model/run-status.js';
import { overlapsAny } from '../plans/plan-redaction.js';
import type { CheckpointEraser, CompactionRun, RunStatus, RunStore, SummaryOutput } from '../ports/ports.js';
import type { InMemoryStoreOptions } from './in-memory-memory-store.js';

export class InMemoryRunStore implements RunStore, CheckpointEraser {
  readonly #now: () => number;
  /** In creation order. */
  readonly #runs = new Map<string, CompactionRun>();

  constructor(options: InMemoryStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async create(
    run: Pick<
      CompactionRun,
      'jobId' | 'channelKey' | 'tier' | 'usage' | 'fromSeq' | 'toSeq' | 'generation' | 'focus' | 'after'
    >,
  ): Promise<void> {
    const existing = this.#runs.get(run.jobId);
    if (existing) {
      // A worker that got the job first created the run without the usage; fill it in.
      if (Number.isNaN(existing.usage)) this.#runs.set(run.jobId, { ...existing, usage: run.usage });
      return;
    }
    this.#runs.set(run.jobId, {
      jobId: run.jobId,
      channelKey: run.channelKey,
      tier: run.tier,
      status: 'queued',
      usage: run.usage,
      fromSeq: run.fromSeq,
      toSeq: run.toSeq,
      generation: run.generation,
      ...(run.focus === undefined ? {} : { focus: run.focus }),
      ...(run.after === undefined ? {} : { after: run.after }),
      attempts: 0,
      createdAt: this.#now(),
    });
  }

  async start(jobId: string): Promise<CompactionRun | undefined> {
    const previous = this.#runs.get(jobId);
    if (previous && !TERMINAL_RUN_STATUSES.has(previous.status)) {
      this.#runs.set(jobId, { ...previous, status: 'running', attempts: previous.attempts + 1 });
    }
    return previous;
  }

  async saveOutput(jobId: string, output: SummaryOutput): Promise<SummaryOutput> {
    const run = this.#runs.get(jobId);
    if (!run) return output;
    if (run.output) return run.output;
    const stored = structuredClone(output);
    this.#runs.set(jobId, { ...run, output: stored });
    return stored;
  }

  /** A finish of a run that was never created changes nothing. */
  async finish(
    jobId: string,
    outcome: Partial<Omit<CompactionRun, 'output' | 'createdAt' | 'finishedAt'>> &
      Pick<CompactionRun, 'status'>,
    options: { readonly onlyFrom?: readonly RunStatus[] } = {},
  ): Promise<void> {
    const run = this.#runs.get(jobId);
    if (!run) return;
    if (options.onlyFrom && !options.onlyFrom.includes(run.status)) return;
    const { jobId: _job, channelKey: _channel, ...fields } = outcome;
    this.#runs.set(jobId, {
      ...run,
      ...withoutUndefined(fields),
      ...(FINISHED_RUN_STATUSES.has(outcome.status) ? { finishedAt: this.#now() } : {}),
    });
  }

  async get(jobId: string): Promise<CompactionRun | undefined> {
    return this.#runs.get(jobId);
  }

  /** Newest first. */
  async recent(channelKey: string, limit: number): Promise<CompactionRun[]> {
    const runs = [...this.#runs.values()].filter((r) => r.channelKey === channelKey).reverse();
    return runs.slice(0, Math.max(0, limit));
  }

  async clearCheckpoints(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    let changed = 0;
    for (const [jobId, run] of this.#runs) {
      if (!run.output || run.channelKey !== channelKey || !overlapsAny(run, ranges)) continue;
      const { output: _output, ...rest } = run;
      this.#runs.set(jobId, rest);
      changed++;
    }
    return changed;
  }

  async dropCheckpointMemories(memoryTexts: readonly string[]): Promise<number> {
    const texts = new Set(memoryTexts);
    let changed = 0;
    for (const [jobId, run] of this.#runs) {
      if (!run.output) continue;
      const memories = run.output.memories.filter((m) => !texts.has(m.text));
      if (memories.length === run.output.memories.length) continue;
      this.#runs.set(jobId, { ...run, output: { ...run.output, memories } });
      changed++;
    }
    return changed;
  }

  /** Oldest first. */
  async unfinished(options: {
    readonly createdBefore: number;
    readonly limit: number;
  }): Promise<CompactionRun[]> {
    return [...this.#runs.values()]
      .filter(
        (r) =>
          (r.status === 'queued' || r.status === 'running') && (r.createdAt ?? 0) < options.createdBefore,
      )
      .slice(0, Math.max(0, options.limit));
  }
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
