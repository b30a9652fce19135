/**
 * `RunStore` and `CheckpointEraser` on Postgres (or PGlite): one `compaction_runs` row per job id,
 * created once, started per attempt, finished with the pass's numbers; its `output` column is the
 * checkpoint. A run that finished (completed, failed, stale, skipped) is not reopened by a retried
 * job's `start`: it gets the row back and stops.
 */
import {
  type CheckpointEraser,
  type CompactionRun,
  FINISHED_RUN_STATUSES,
  type RunStatus,
  type RunStore,
  type SeqRange,
  type SummaryOutput,
  TERMINAL_RUN_STATUSES,
} from '@ebb/core';
import { and, asc, desc, eq, inArray, isNotNull, lt, sql } from 'drizzle-orm';
import type { EbbDatabase, PgStoreOptions } from './ebb-database.js';
import { overlapping } from './pg-channel-rows.js';
import { dbCall } from './pg-errors.js';
import { withoutNulls } from './rows.js';
import { compactionRuns } from './schema.js';

type RunRow = typeof compactionRuns.$inferSelect;
type RunUpdate = Partial<typeof compactionRuns.$inferInsert>;

/** Fields `finish` may set, by their name in both `CompactionRun` and the table. */
const FINISH_FIELDS = [
  'tier',
  'usage',
  'fromSeq',
  'toSeq',
  'generation',
  'attempts',
  'tokensBefore',
  'tokensAfter',
  'summaryTokens',
  'memoriesAdded',
  'model',
  'fallback',
  'inputTokens',
  'outputTokens',
  'durationMs',
  'error',
] as const satisfies readonly (keyof CompactionRun & keyof RunUpdate)[];

export class PgRunStore implements RunStore, CheckpointEraser {
  readonly #db: EbbDatabase;

  constructor(options: PgStoreOptions) {
    this.#db = options.db;
  }

  create(
    run: Pick<
      CompactionRun,
      'jobId' | 'channelKey' | 'tier' | 'usage' | 'fromSeq' | 'toSeq' | 'generation' | 'focus' | 'after'
    >,
  ): Promise<void> {
    return dbCall('createRun', async () => {
      await this.#db
        .insert(compactionRuns)
        .values({
          jobId: run.jobId,
          channelKey: run.channelKey,
          tier: run.tier,
          status: 'queued',
          usage: run.usage,
          fromSeq: run.fromSeq,
          toSeq: run.toSeq,
          generation: run.generation,
          focus: run.focus ?? null,
          after: run.after ?? null,
        })
        // A worker that got the job first created the row without the usage; fill it in.
        .onConflictDoUpdate({
          target: compactionRuns.jobId,
          set: { usage: run.usage },
          setWhere: sql`${compactionRuns.usage} = 'NaN'::real`,
        });
    });
  }

  start(jobId: string): Promise<CompactionRun | undefined> {
    return dbCall('startRun', () =>
      this.#db.transaction(async (tx) => {
        const [previous] = await tx
          .select()
          .from(compactionRuns)
          .where(eq(compactionRuns.jobId, jobId))
          .for('update');
        if (!previous) return undefined;
        if (!TERMINAL_RUN_STATUSES.has(previous.status)) {
          await tx
            .update(compactionRuns)
            .set({
              status: 'running',
              attempts: sql`${compactionRuns.attempts} + 1`,
              startedAt: sql`now()`,
            })
            .where(eq(compactionRuns.id, previous.id));
        }
        return toRun(previous);
      }),
    );
  }

  saveOutput(jobId: string, output: SummaryOutput): Promise<SummaryOutput> {
    return dbCall('saveRunOutput', async () => {
      // First writer wins: a second worker on the same job continues with the stored output.
      const [saved] = await this.#db
        .update(compactionRuns)
        .set({ output })
        .where(and(eq(compactionRuns.jobId, jobId), sql`${compactionRuns.output} is null`))
        .returning({ output: compactionRuns.output });
      if (saved?.output) return saved.output as SummaryOutput;
      const [stored] = await this.#db
        .select({ output: compactionRuns.output })
        .from(compactionRuns)
        .where(eq(compactionRuns.jobId, jobId));
      return (stored?.output as SummaryOutput | null | undefined) ?? output;
    });
  }

  /** A finish of a run that was never created changes nothing. */
  finish(
    jobId: string,
    outcome: Partial<Omit<CompactionRun, 'output' | 'createdAt' | 'finishedAt'>> &
      Pick<CompactionRun, 'status'>,
    options: { readonly onlyFrom?: readonly RunStatus[] } = {},
  ): Promise<void> {
    return dbCall('finishRun', async () => {
      const set: Record<string, unknown> = { status: outcome.status };
      for (const field of FINISH_FIELDS) if (outcome[field] !== undefined) set[field] = outcome[field];
      if (FINISHED_RUN_STATUSES.has(outcome.status)) set.finishedAt = sql`now()`;
      await this.#db
        .update(compactionRuns)
        .set(set as RunUpdate)
        .where(
          and(
            eq(compactionRuns.jobId, jobId),
            options.onlyFrom ? inArray(compactionRuns.status, [...options.onlyFrom]) : undefined,
          ),
        );
    });
  }

  get(jobId: string): Promise<CompactionRun | undefined> {
    return dbCall('getRun', async () => {
      const [row] = await this.#db.select().from(compactionRuns).where(eq(compactionRuns.jobId, jobId));
      return row && toRun(row);
    });
  }

  /** Newest first. */
  recent(channelKey: string, limit: number): Promise<CompactionRun[]> {
    return dbCall('recentRuns', async () => {
      const rows = await this.#db
        .select()
        .from(compactionRuns)
        .where(eq(compactionRuns.channelKey, channelKey))
        .orderBy(desc(compactionRuns.createdAt), desc(compactionRuns.id))
        .limit(Math.max(0, limit));
      return rows.map(toRun);
    });
  }

  clearCheckpoints(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    return dbCall('clearCheckpoints', async () => {
      if (ranges.length === 0) return 0;
      const cleared = await this.#db
        .update(compactionRuns)
        .set({ output: null })
        .where(
          and(
            eq(compactionRuns.channelKey, channelKey),
            isNotNull(compactionRuns.output),
            overlapping(compactionRuns.fromSeq, compactionRuns.toSeq, ranges),
          ),
        )
        .returning({ id: compactionRuns.id });
      return cleared.length;
    });
  }

  dropCheckpointMemories(memoryTexts: readonly string[]): Promise<number> {
    return dbCall('dropCheckpointMemories', async () => {
      if (memoryTexts.length === 0) return 0;
      const texts = sql`${JSON.stringify(memoryTexts)}::jsonb`;
      const holds = sql`exists (select 1 from jsonb_array_elements(${compactionRuns.output}->'memories') m
        where ${texts} ? (m->>'text'))`;
      const dropped = await this.#db
        .update(compactionRuns)
        .set({
          output: sql`jsonb_set(${compactionRuns.output}, '{memories}', coalesce((
            select jsonb_agg(m) from jsonb_array_elements(${compactionRuns.output}->'memories') m
            where not (${texts} ? (m->>'text'))), '[]'::jsonb))`,
        })
        .where(and(isNotNull(compactionRuns.output), holds))
        .returning({ id: compactionRuns.id });
      return dropped.length;
    });
  }

  /** Oldest first; served by the partial index `compaction_runs_unfinished_idx`. */
  unfinished(options: { readonly createdBefore: number; readonly limit: number }): Promise<CompactionRun[]> {
    return dbCall('unfinishedRuns', async () => {
      const rows = await this.#db
        .select()
        .from(compactionRuns)
        .where(
          and(
            inArray(compactionRuns.status, [...UNFINISHED]),
            lt(compactionRuns.createdAt, new Date(options.createdBefore)),
          ),
        )
        .orderBy(asc(compactionRuns.createdAt), asc(compactionRuns.id))
        .limit(Math.max(0, options.limit));
      return rows.map(toRun);
    });
  }
}

const UNFINISHED = ['queued', 'running'] as const satisfies readonly RunStatus[];

function toRun(row: RunRow): CompactionRun {
  const { id: _id, startedAt: _started, createdAt, finishedAt, ...fields } = row;
  return {
    ...withoutNulls(fields),
    createdAt: createdAt.getTime(),
    ...(finishedAt === null ? {} : { finishedAt: finishedAt.getTime() }),
  };
}
