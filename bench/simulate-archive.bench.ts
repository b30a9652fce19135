/**
 * `ebb simulate --from-archive` on Postgres: the built CLI (`npm run build` first; the source
 * condition is dropped for it) replaying 100,000 and 300,000 archived messages (the IRC transcript,
 * repeated, one a second, built-in defaults), wall clock and peak RSS (`/usr/bin/time`; target: 100k
 * in under 10 s and 300 MiB). The 300k replay again with the heap capped at 64 MB shows that what it
 * holds does not grow with the archive (pages by seq, summarized messages dropped): the RSS above that
 * is V8 collecting lazily. Beside them, the same 100k as a transcript file through `ebb simulate
 * FILE`, and what `--suggest` costs on 20,000 messages.
 *
 *   npm run build && npm run bench -- simulate-archive
 *   EBB_BENCH_ARCHIVE_SCHEMA=ebb_bench_archive npm run bench -- simulate-archive   # keep (and reuse) the loaded archive
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewMessage, TranscriptMessage } from '@ebb/core';
import { createDb, migrate, PgArchiveReader, PgChannelStore } from '@ebb/db';
import { freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { sql } from 'drizzle-orm';
import { chatMessages, EBB_BIN, median, ROOT, table } from './support.js';

const RUNS = 3;
const SIZES = [100_000, 300_000];
const SUGGEST_MESSAGES = 20_000;

export async function simulateArchiveBench(): Promise<string> {
  const { source, messages } = chatMessages();
  const kept = process.env.EBB_BENCH_ARCHIVE_SCHEMA;
  const pg = kept === undefined ? await freshSchemaDb({ poolSize: 2 }) : await keptSchema(kept);
  try {
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('options', `-c search_path=${pg.schema}`);
    const nodeOptions = (process.env.NODE_OPTIONS ?? '').replace('--conditions=ebb-source', '').trim();
    const env = {
      ...process.env,
      DATABASE_URL: url.toString(),
      NODE_OPTIONS: nodeOptions,
      EBB_CONFIG: emptyConfig(),
    };
    const store = new PgChannelStore({ db: pg.db });
    const reader = new PgArchiveReader({ db: pg.db });
    const rows: (string | number)[][] = [];
    for (const n of [...SIZES, SUGGEST_MESSAGES])
      if ((await reader.count(`web:bench-${n}`)) !== n) await archive(store, `web:bench-${n}`, messages, n);

    for (const n of SIZES) {
      const runs = Array.from({ length: n === SIZES[0] ? RUNS : 1 }, () =>
        timed(['simulate', '--from-archive', `web:bench-${n}`, '--json'], env),
      );
      rows.push([`--from-archive, ${n.toLocaleString('en')} messages`, ...summarize(runs, n)]);
    }
    const last = SIZES.at(-1) ?? 0;
    const capped = timed(['simulate', '--from-archive', `web:bench-${last}`, '--json'], {
      ...env,
      NODE_OPTIONS: `${nodeOptions} --max-old-space-size=64`,
    });
    rows.push([
      `--from-archive, ${last.toLocaleString('en')} messages, heap capped at 64 MB`,
      ...summarize([capped], last),
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'ebb-bench-'));
    const file = join(dir, 'archive-100k.jsonl');
    writeFileSync(
      file,
      `${repeated(messages, SIZES[0] ?? 0)
        .map((m) => JSON.stringify(m))
        .join('\n')}\n`,
    );
    const fileRuns = Array.from({ length: RUNS }, () => timed(['simulate', file, '--json'], env));
    rows.push([
      `transcript file, ${(SIZES[0] ?? 0).toLocaleString('en')} messages`,
      ...summarize(fileRuns, SIZES[0] ?? 0),
    ]);

    const suggest = timed(['simulate', '--from-archive', `web:bench-${SUGGEST_MESSAGES}`, '--suggest'], env);
    const searched =
      /searched (\d+) settings \((\d+) refused[^)]*\) in (\d+) reads of the archive, (\d+) replays/.exec(
        suggest.out,
      );
    return [
      `Source: ${source}, repeated; one message a second; built-in defaults. Wall clock including Node start-up; peak RSS of the process.`,
      '',
      table(['replay', 'seconds', 'messages/s', 'peak RSS MiB'], rows),
      '',
      `--suggest on ${SUGGEST_MESSAGES.toLocaleString('en')} archived messages: ${suggest.seconds.toFixed(1)} s, ${suggest.rssMiB.toFixed(0)} MiB peak RSS; ${searched?.[1] ?? '?'} settings searched (${searched?.[2] ?? '?'} refused by config check), ${searched?.[4] ?? '?'} replays in ${searched?.[3] ?? '?'} reads of the archive.`,
    ].join('\n');
  } finally {
    await pg.close();
  }
}

/** A schema kept between runs (created and migrated when new); `close` only closes the pool. */
async function keptSchema(schema: string) {
  const admin = await createDb({ databaseUrl: testDatabaseUrl(), poolSize: 1 });
  await admin.db.execute(sql.raw(`create schema if not exists ${schema}`));
  await admin.close();
  const database = await createDb({ databaseUrl: testDatabaseUrl(), schema });
  await migrate(database);
  return { db: database.db, schema, close: () => database.close() };
}

/** Built-in defaults: an empty config file (the shipped one may name keys an older build does not know). */
function emptyConfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'ebb-bench-')), 'config.toml');
  writeFileSync(file, '');
  return file;
}

function repeated(messages: readonly TranscriptMessage[], n: number): TranscriptMessage[] {
  const start = Date.parse('2026-01-05T09:00:00Z');
  return Array.from({ length: n }, (_, i) => {
    const m = messages[i % messages.length] as TranscriptMessage;
    return { ...m, ts: new Date(start + i * 1000).toISOString() };
  });
}

async function archive(
  store: PgChannelStore,
  key: string,
  messages: readonly TranscriptMessage[],
  n: number,
) {
  const all = repeated(messages, n);
  for (let i = 0; i < all.length; i += 1_000) {
    const batch: NewMessage[] = all.slice(i, i + 1_000).map((m) => ({ ...m, tokens: 0, contextTokens: 0 }));
    await store.appendAll(key, batch);
  }
}

interface Timed {
  readonly seconds: number;
  readonly rssMiB: number;
  readonly out: string;
}

/** The CLI under `/usr/bin/time`: wall seconds and peak RSS. */
function timed(args: readonly string[], env: NodeJS.ProcessEnv): Timed {
  const marker = 'EBB-BENCH-TIME';
  const out = execFileSync(
    'sh',
    [
      '-c',
      `/usr/bin/time -f "${marker} %e %M" "$@" 2>&1 >/tmp/ebb-bench-simulate-archive.out; grep -v '^{' /tmp/ebb-bench-simulate-archive.out || true`,
      'sh',
      process.execPath,
      EBB_BIN,
      ...args,
    ],
    { env, cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 },
  );
  const match = new RegExp(`${marker} ([\\d.]+) (\\d+)`).exec(out);
  if (!match) throw new Error(`no timing in: ${out.slice(-2000)}`);
  return { seconds: Number(match[1]), rssMiB: Number(match[2]) / 1024, out };
}

function summarize(runs: readonly Timed[], n: number): (string | number)[] {
  const seconds = median(runs.map((r) => r.seconds));
  const rss = Math.max(...runs.map((r) => r.rssMiB));
  return [seconds.toFixed(2), Math.round(n / seconds).toLocaleString('en'), rss.toFixed(0)];
}
