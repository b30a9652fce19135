/**
 * One replica against three (`npm run bench -- replicas [--turns N] [--channels N] [--in-flight N]`,
 * or `EBB_BENCH_REPLICA_TURNS`): the same load on one `startEbb` and on three (in this process, each
 * with its own Postgres pool, one Redis prefix, so the channel leases, answer claims and context
 * caches are the replicas' own), on a fresh schema each. 200 channels; first a warm-up turn on every
 * channel at every replica (every cache holds every channel, as after a while in production), then
 * 2,000 timed turns, each to a channel and a replica drawn at random (seeded), `--in-flight` at once,
 * the model (the fake OpenAI server) answering at once, the default 128k window (no pass runs).
 *
 * Reported: turns/s; Postgres rows read per timed turn, from the schema's `pg_stat_user_tables`
 * (`seq_tup_read + idx_tup_fetch`, by table too), and over the whole run (startup, warm-up and first
 * loads included); and the context cache's counters over the timed turns, summed over the replicas
 * (`bot.contextCache()`; `reloads` and `deltaLoads` when the cache has them).
 *
 * How the counts are read on this server (Postgres 15, `pg_stat_statements` available but not in
 * `shared_preload_libraries`, so the table counters it is): a backend keeps its counts until it
 * flushes them, at most once a second, else 10 s after it goes idle; a read right after the load
 * missed about a tenth of them. So the timed turns start after `STATS_QUIET_MS` of quiet (every
 * backend has flushed the warm-up by then), and end with the replicas' pools closed: the pools carry
 * an `application_name`, and the counts are read once none of their backends is left in
 * `pg_stat_activity` (a backend flushes on exit, before it leaves that view), in a fresh snapshot
 * (`pg_stat_clear_snapshot()`). A second read 12 s later gave the same counts.
 *
 * On a 2-core machine the three replicas share the same two cores (and one event loop here), so the
 * turns/s ratio measures what replicas cost, not what they scale to.
 */
import { parseArgs } from 'node:util';
import { loadEnv, parseConfig } from '@ebb/config';
import { createDb, type Database, rowsOf } from '@ebb/db';
import { freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { seededRandom } from '@ebb/testing/seeded-random';
import { sql } from 'drizzle-orm';
import { type RunningEbb, startEbb } from '../apps/bot/src/start-ebb.js';
import { FULL_SPEED_WEB } from '../apps/bot/test/small-window.js';
import { table } from './support.js';

interface ReplicasBenchOptions {
  readonly turns: number;
  readonly channels: number;
  readonly inFlight: number;
}

function benchOptions(argv: readonly string[]): ReplicasBenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: { turns: { type: 'string' }, channels: { type: 'string' }, 'in-flight': { type: 'string' } },
  });
  const count = (text: string | undefined, flag: string, fallback: number) => {
    if (text === undefined) return fallback;
    const n = Number(text.replaceAll('_', ''));
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} takes a positive integer, got ${text}`);
    return n;
  };
  return {
    turns: count(values.turns ?? process.env.EBB_BENCH_REPLICA_TURNS, 'turns', 2_000),
    channels: count(values.channels, 'channels', 200),
    inFlight: count(values['in-flight'], 'in-flight', 16),
  };
}

/** The URL with an `application_name`, by which the bench finds its pools' backends. */
function namedUrl(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', name);
  return parsed.toString();
}

/** Rows read from each table of the schema: sequential scans' tuples and index fetches. */
type RowsRead = ReadonlyMap<string, { readonly seq: number; readonly idx: number }>;

async function rowsRead(database: Database, schema: string): Promise<RowsRead> {
  return await database.db.transaction(async (tx) => {
    // The stats of this transaction's first read are kept for the transaction (stats_fetch_consistency).
    await tx.execute(sql`select pg_stat_clear_snapshot()`);
    const result = await tx.execute(
      sql`select relname, coalesce(seq_tup_read, 0)::bigint as seq, coalesce(idx_tup_fetch, 0)::bigint as idx
          from pg_stat_user_tables where schemaname = ${schema}`,
    );
    return new Map(
      rowsOf<{ relname: string; seq: string; idx: string }>(result).map((r) => [
        r.relname,
        { seq: Number(r.seq), idx: Number(r.idx) },
      ]),
    );
  });
}

function rowsSince(before: RowsRead, after: RowsRead): RowsRead {
  return new Map(
    [...after].map(([name, { seq, idx }]) => [
      name,
      { seq: seq - (before.get(name)?.seq ?? 0), idx: idx - (before.get(name)?.idx ?? 0) },
    ]),
  );
}

function totalRows(rows: RowsRead): { seq: number; idx: number } {
  let seq = 0;
  let idx = 0;
  for (const r of rows.values()) {
    seq += r.seq;
    idx += r.idx;
  }
  return { seq, idx };
}

/** Waits until no backend of the named pools is connected: each flushed its stats on exit. */
async function backendsGone(database: Database, namePrefix: string): Promise<void> {
  for (let deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const result = await database.db.execute(
      sql`select count(*)::int as n from pg_stat_activity where application_name like ${`${namePrefix}%`}`,
    );
    if (rowsOf<{ n: number }>(result)[0]?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`backends of ${namePrefix} still connected 30 s after their pools closed`);
}

/**
 * Postgres 15's `PGSTAT_IDLE_INTERVAL` (10 s) and a second: a backend that went idle with counts
 * not yet flushed (it flushed less than a second before) flushes them this long after, at most.
 */
const STATS_QUIET_MS = 11_000;

function cacheStats(replicas: readonly RunningEbb[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const ebb of replicas)
    for (const [name, value] of Object.entries(ebb.bot.contextCache()))
      if (typeof value === 'number') sum[name] = (sum[name] ?? 0) + value;
  return sum;
}

interface PhaseResult {
  readonly replicas: number;
  readonly seconds: number;
  readonly answered: number;
  readonly warmUpTurns: number;
  /** Rows read by the timed turns, and over the whole run (startup and warm-up included). */
  readonly rows: RowsRead;
  readonly allRows: RowsRead;
  readonly archived: number;
  /** The cache's counters over the timed turns. */
  readonly cache: Record<string, number>;
}

/**
 * Posts `turns` messages, `inFlight` at a time, each to the channel and replica `target` draws; the
 * number answered.
 */
async function load(
  replicas: readonly RunningEbb[],
  turns: number,
  inFlight: number,
  target: (i: number) => { channel: string; replica: number; id: string },
): Promise<number> {
  let next = 0;
  let answered = 0;
  const sender = async () => {
    for (let i = next++; i < turns; i = next++) {
      const { channel, replica, id } = target(i);
      const ebb = replicas[replica] as RunningEbb;
      const res = await fetch(`${ebb.web.url}/api/channels/${channel}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ author: 'ana', text: `message ${id}: status of item ${i % 50} is green`, id }),
      });
      const body = (await res.json()) as { reply?: string | null };
      if (res.status === 200 && body.reply) answered++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, sender));
  return answered;
}

/**
 * One shape: `replicaCount` replicas on a fresh schema; a warm-up turn on every channel at every
 * replica (each cache holds every channel, as after a while in production), quiet until the stats
 * are flushed, then the timed turns.
 */
async function phase(
  fakeUrl: string,
  replicaCount: number,
  options: ReplicasBenchOptions,
): Promise<PhaseResult> {
  const fresh = await freshSchemaDb();
  const prefix = randomPrefix();
  const appName = `ebb-bench-${prefix}`;
  const config = parseConfig(
    ['[llm]', `base_url = "${fakeUrl}"`, ...FULL_SPEED_WEB, '[web.bot]', 'respond_to = "all"'].join('\n'),
    'replicas-bench.toml',
  );
  const pools: Database[] = [];
  const replicas: RunningEbb[] = [];
  try {
    const before = await rowsRead(fresh.database, fresh.schema);
    for (let i = 0; i < replicaCount; i++) {
      const pool = await createDb({
        databaseUrl: namedUrl(testDatabaseUrl(), `${appName}-${i}`),
        schema: fresh.schema,
      });
      pools.push(pool);
      replicas.push(
        await startEbb({
          config: () => config,
          env: loadEnv({ OPENAI_API_KEY: 'test-key', EBB_REDIS_PREFIX: prefix }),
          logger: createLogger({ level: 'silent' }),
          withWorker: false,
          webPort: 0,
          database: pool,
          processMetrics: false,
        }),
      );
    }
    const warmUpTurns = options.channels * replicaCount;
    await load(replicas, warmUpTurns, options.inFlight, (i) => ({
      channel: `c${i % options.channels}`,
      replica: Math.floor(i / options.channels),
      id: `w${i}`,
    }));
    await new Promise((resolve) => setTimeout(resolve, STATS_QUIET_MS));
    const warm = await rowsRead(fresh.database, fresh.schema);
    const cacheBefore = cacheStats(replicas);

    const random = seededRandom(7);
    const started = performance.now();
    const answered = await load(replicas, options.turns, options.inFlight, (i) => ({
      channel: `c${Math.floor(random() * options.channels)}`,
      replica: Math.floor(random() * replicas.length),
      id: `m${i}`,
    }));
    const seconds = (performance.now() - started) / 1000;
    const cacheAfter = cacheStats(replicas);
    const cache = Object.fromEntries(
      Object.entries(cacheAfter).map(([name, value]) => [name, value - (cacheBefore[name] ?? 0)]),
    );

    for (const ebb of replicas.splice(0)) await ebb.close();
    for (const pool of pools.splice(0)) await pool.close();
    await backendsGone(fresh.database, appName);
    const after = await rowsRead(fresh.database, fresh.schema);
    const counted = await fresh.database.db.execute(sql`select count(*)::int as n from messages`);
    return {
      replicas: replicaCount,
      seconds,
      answered,
      warmUpTurns,
      rows: rowsSince(warm, after),
      allRows: rowsSince(before, after),
      archived: rowsOf<{ n: number }>(counted)[0]?.n ?? 0,
      cache,
    };
  } finally {
    for (const ebb of replicas) await ebb.close().catch(() => {});
    for (const pool of pools) await pool.close().catch(() => {});
    await dropPrefix(prefix);
    await fresh.close();
  }
}

/** Counters of the cache that count events (not what it holds now). */
const HELD = ['channels', 'bytes', 'budgetBytes'];

export async function replicasBench(argv: readonly string[] = []): Promise<string> {
  const options = benchOptions(argv);
  const fake = await FakeOpenAiServer.start();
  fake.reply({ content: 'ok, noted.' });
  const results: PhaseResult[] = [];
  try {
    for (const count of [1, 3]) results.push(await phase(fake.url, count, options));
  } finally {
    await fake.close();
  }
  const [one, three] = results as [PhaseResult, PhaseResult];
  const perTurn = (rows: RowsRead, turns: number) => {
    const { seq, idx } = totalRows(rows);
    return (seq + idx) / turns;
  };
  const timed = (r: PhaseResult) => perTurn(r.rows, options.turns);
  const whole = (r: PhaseResult) => perTurn(r.allRows, options.turns + r.warmUpTurns);
  const rate = (r: PhaseResult) => options.turns / r.seconds;
  const counters = [...new Set(results.flatMap((r) => Object.keys(r.cache)))].filter(
    (n) => !HELD.includes(n),
  );
  const rows = results.map((r) => {
    const { seq, idx } = totalRows(r.rows);
    return [
      r.replicas,
      `${r.answered} / ${options.turns}`,
      r.archived,
      rate(r).toFixed(0),
      timed(r).toFixed(2),
      `${(seq / options.turns).toFixed(2)} / ${(idx / options.turns).toFixed(2)}`,
      whole(r).toFixed(2),
      ...counters.map((name) => r.cache[name] ?? '–'),
    ];
  });
  const tables = [...new Set(results.flatMap((r) => [...r.rows.keys()]))]
    .map((name) => {
      const of = (r: PhaseResult) => {
        const t = r.rows.get(name);
        return t ? (t.seq + t.idx) / options.turns : 0;
      };
      return [name, of(one), of(three)] as const;
    })
    .filter(([, a, b]) => a > 0 || b > 0)
    .sort((x, y) => y[2] - x[2]);
  return [
    `${options.turns.toLocaleString('en')} timed turns over ${options.channels} channels, ${options.inFlight} in flight, each to a channel and a replica drawn at random (seeded), after a warm-up turn on every channel at every replica; the model answers at once; the replicas run in this process, each with its own Postgres pool`,
    '',
    table(
      [
        'replicas',
        'answered',
        'messages archived',
        'turns/s',
        'rows read / turn',
        'seq / index',
        'whole run, / turn',
        ...counters.map((name) => `cache ${name}`),
      ],
      rows,
    ),
    '',
    `**3/1 turns/s: ${(rate(three) / rate(one)).toFixed(2)}** (on a 2-core machine the three replicas share the same two cores and this process's event loop: the ratio is what replicas cost, not scale-out). ` +
      `**3/1 rows read per turn: ${(timed(three) / timed(one)).toFixed(2)}** (target: within 2×); over the whole run, startup, warm-up and first loads included: ${(whole(three) / whole(one)).toFixed(2)}.` +
      (counters.includes('deltaLoads')
        ? ''
        : ' The context cache has no `reloads`/`deltaLoads` counters in this tree.'),
    '',
    'Rows read per timed turn, by table:',
    '',
    table(
      ['table', '1 replica', '3 replicas'],
      tables.map(([name, a, b]) => [name, a.toFixed(2), b.toFixed(2)]),
    ),
  ].join('\n');
}
