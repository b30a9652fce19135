/**
 * The retention bench's pieces: the archive loaded in bulk, the sweep in a process of its own (a
 * real `ebb worker`, as production with Redis runs it), and the turns' timing with the event loop's
 * delay beside it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ebbWorkerProcess } from '@ebb/compaction-worker/test-support';
import type { EbbDatabase } from '@ebb/db';
import { sql } from 'drizzle-orm';
import { median, percentile, table } from './support.js';

const DAY = 86_400_000;

/**
 * `total` messages in `key`: message i said (400 - 400 i / total) days before `now`; one summary over
 * all but the newest 1,000, as a channel that has been compacted for a year holds it.
 */
export async function loadArchive(db: EbbDatabase, key: string, total: number, now: number): Promise<void> {
  await db.execute(sql`
    insert into channels (key, platform, head_seq, prefix_end, span_tokens, raw_tokens, generation)
    values (${key}, 'web', ${total}, ${total - 1_000}, 40, ${1_000 * 20}, 1)`);
  await db.execute(sql`
    insert into messages (channel_key, seq, role, author, content, tokens, context_tokens, ts)
    select ${key}, g, 'user', 'u' || (g % 50),
      'status ' || g || ': service-' || (g % 40) || ' deployed build ' || (1000 + g) || ', all checks green',
      20, 20,
      to_char(to_timestamp((${now} - (400 - 400.0 * g / ${total}) * ${DAY}) / 1000.0) at time zone 'UTC',
        'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    from generate_series(1, ${total}) g`);
  await db.execute(sql`
    insert into context_spans (channel_key, from_seq, to_seq, kind, text, tokens, created_generation, job_id)
    values (${key}, 1, ${total - 1_000}, 'summary', 'A year of deploys, all green.', 40, 1, 'bench-summary')`);
}

export interface SweepWorker {
  /** Its modules loaded and its database open: the sweep starts now. */
  readonly started: Promise<void>;
  /** Its `retention.swept` line: messages taken back. */
  readonly swept: Promise<{ readonly messages: number }>;
  /** SIGSTOP: it stops where it is (its statement in flight finishes in Postgres). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGTERM, then its exit. */
  stop(): Promise<void>;
}

/**
 * `ebb worker` on the bench's schema and Redis prefix, with `retain_days = 30` on `key` only: it
 * sweeps at its start. Offline (no OPENAI_API_KEY): the extractive summarizer writes the summary.
 */
export async function startSweepWorker(args: {
  readonly databaseUrl: string;
  readonly redisUrl: string;
  readonly prefix: string;
  readonly key: string;
}): Promise<SweepWorker> {
  const dir = await mkdtemp(join(tmpdir(), 'ebb-retention-bench-'));
  const config = join(dir, 'config.toml');
  await writeFile(config, `[channels."${args.key}".privacy]\nretain_days = 30\n`);
  // The tests' `ebb worker` (no OPENAI_API_KEY reaches it: the extractive summarizer).
  const worker = ebbWorkerProcess({
    config,
    stderr: 'inherit',
    env: {
      DATABASE_URL: args.databaseUrl,
      REDIS_URL: args.redisUrl,
      EBB_REDIS_PREFIX: args.prefix,
      EBB_METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    },
  });
  // A bench that ends early (an error, `process.exit`) leaves no worker behind.
  const orphaned = () => worker.child.kill('SIGTERM');
  process.once('exit', orphaned);
  const started = worker.logged('worker.metrics_started').then(() => {});
  const swept = worker.logged('retention.swept').then((l) => ({ messages: Number(l.messages) }));
  // Rejections are the caller's once it awaits; not unhandled before that.
  started.catch(() => {});
  swept.catch(() => {});
  return {
    started,
    swept,
    pause: () => worker.child.kill('SIGSTOP'),
    resume: () => worker.child.kill('SIGCONT'),
    async stop() {
      process.off('exit', orphaned);
      // A stopped process does not act on SIGTERM until it runs again.
      worker.child.kill('SIGCONT');
      worker.child.kill('SIGTERM');
      await worker.exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The turns of one phase, and how late the event loop of this process (the turns') ran meanwhile. */
export class Phase {
  readonly name: string;
  readonly turns: number[] = [];
  readonly #loop = monitorEventLoopDelay({ resolution: 1 });
  #loopMaxMs = 0;

  constructor(name: string) {
    this.name = name;
    this.#loop.enable();
  }

  end(): this {
    this.#loop.disable();
    this.#loopMaxMs = this.#loop.max / 1e6;
    return this;
  }

  get loopMaxMs(): number {
    return this.#loopMaxMs;
  }
}

/** One row per phase; a sweep's p99 is compared with the baselines beside it (the machine is shared). */
export function phaseTable(rows: readonly { phase: Phase; baselines?: readonly Phase[] }[]): string {
  const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
  return table(
    ['phase', 'turns', 'p50', 'p99', 'max', 'event-loop delay max', 'p99 ratio to the baselines beside it'],
    rows.map(({ phase, baselines }) => {
      const s = sorted(phase.turns);
      const base = baselines && sorted(baselines.flatMap((b) => b.turns));
      return [
        phase.name,
        s.length.toLocaleString('en'),
        median(s).toFixed(2),
        percentile(s, 0.99).toFixed(2),
        (s.at(-1) ?? Number.NaN).toFixed(1),
        phase.loopMaxMs.toFixed(0),
        base ? (percentile(s, 0.99) / percentile(base, 0.99)).toFixed(2) : '',
      ];
    }),
  );
}
