/**
 * `ebb simulate --from-archive` against the real Postgres archive: a channel whose bursts make the
 * defaults truncate with the passes it recorded gets a block that `ebb config check` accepts and that
 * replays with 0 emergencies at no more cost; a channel with little history says how much it needs;
 * a glob does both.
 */
import { appendFileSync, copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BURSTY_CONFIG,
  BURSTY_PASS_MS,
  burstyTraffic,
  recordPasses,
  sayHello,
} from '../../test/bursty-traffic.js';
import { captureIo } from '../../test/capture-io.js';
import { configCheck } from './config-check.js';
import { simulateArchive } from './simulate-archive.js';

const dir = mkdtempSync(join(tmpdir(), 'ebb-simulate-archive-'));
const configFile = join(dir, 'config.toml');
writeFileSync(configFile, BURSTY_CONFIG);
const BURSTY = 'web:bursty';
const QUIET = 'web:quiet';
let pg: FreshSchemaDb;
beforeAll(async () => {
  pg = await freshSchemaDb({ poolSize: 2 });
  const store = new PgChannelStore({ db: pg.db });
  const burst = burstyTraffic();
  for (let i = 0; i < burst.length; i += 400) await store.appendAll(BURSTY, burst.slice(i, i + 400));
  await sayHello(store, QUIET, 30);
  const runs = new PgRunStore({ db: pg.db });
  await recordPasses(runs, BURSTY, BURSTY_PASS_MS);
}, 120_000);
afterAll(async () => {
  await pg?.close();
});

const deps = () => ({ database: pg.database, env: {} });

function summaryOf(jsonLines: string) {
  const summary = jsonLines
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((e) => e.type === 'summary');
  expect(summary).toBeDefined();
  return summary;
}

describe('ebb simulate --from-archive', () => {
  it('replays the channel with its passes as long as the recorded ones', async () => {
    const io = captureIo();
    expect(await simulateArchive({ fromArchive: BURSTY, config: configFile }, io, deps())).toBe(0);
    expect(io.stdout()).toContain(
      'web:bursty: 2,400 archived messages; its 10 recorded passes took 7 s (median), 7.3 s (90th percentile); passes replayed at the 90th percentile, 7.3 s',
    );
    expect(io.stdout()).toMatch(/emergency truncations [1-9]/);
  });

  it('suggests a block config check accepts that replays with 0 emergencies at no more cost', async () => {
    const io = captureIo();
    const args = { fromArchive: BURSTY, config: configFile, suggest: true, json: true };
    expect(await simulateArchive(args, io, deps())).toBe(0);
    const report = JSON.parse(io.stdout());
    expect(report.status).toBe('suggested');
    expect(report.suggestion.current.emergencies).toBeGreaterThan(0);
    const { suggested, block } = report.suggestion;
    expect(suggested.outcome.emergencies).toBe(0);
    expect(suggested.outcome.costPerThousand).toBeLessThanOrEqual(report.suggestion.current.costPerThousand);
    expect(block).toMatch(/^\[channels\."web:bursty"\.compaction\]\n/);

    const tuned = join(dir, 'tuned.toml');
    copyFileSync(configFile, tuned);
    appendFileSync(tuned, `\n${block}\n`);
    const check = captureIo();
    expect(await configCheck({ config: tuned, channel: BURSTY }, check)).toBe(0);
    const replay = captureIo();
    expect(await simulateArchive({ fromArchive: BURSTY, config: tuned, json: true }, replay, deps())).toBe(0);
    const summary = summaryOf(replay.stdout());
    expect(summary.tiers.emergency).toBe(0);
    expect(summary.messages).toBe(2_400);
  });

  it('says when no setting reaches 0 emergencies, and what would', async () => {
    const io = captureIo();
    const args = { fromArchive: BURSTY, config: configFile, suggest: true, jobSeconds: 60 };
    expect(await simulateArchive(args, io, deps())).toBe(0);
    const text = io.stdout();
    expect(text).toMatch(
      /no setting reaches 0 emergencies at this channel's burst rate with passes of 60 s; the closest has \d+\./,
    );
    expect(text).toMatch(/with context_window = 16000: \d+ emergencies/);
    expect(text).toMatch(/with passes twice as fast \(30\.0 s: a faster summarizer_model\): \d+ emergencies/);
    expect(text).not.toContain('[channels.');
  });

  it('says how much history a quiet channel needs', async () => {
    const io = captureIo();
    expect(await simulateArchive({ fromArchive: QUIET, config: configFile, suggest: true }, io, deps())).toBe(
      0,
    );
    expect(io.stdout()).toMatch(/^web:quiet: 30 archived messages; no recorded passes/);
    expect(io.stdout()).toMatch(/too little history to tune from: .* about [\d,]+ messages/);
  });

  it('takes a glob: one report (and one block) per channel', async () => {
    const json = captureIo();
    const args = { fromArchive: 'web:*', config: configFile, suggest: true, json: true };
    expect(await simulateArchive(args, json, deps())).toBe(0);
    const [bursty, quiet] = JSON.parse(json.stdout());
    expect(bursty).toMatchObject({ channel: BURSTY, status: 'suggested' });
    expect(bursty.suggestion.block).toMatch(/^\[channels\."web:bursty"\.compaction\]\n/);
    expect(quiet).toMatchObject({ channel: QUIET, status: 'too_little_history', messages: 30 });
    expect(quiet.neededMessages).toBeGreaterThan(30);
  });

  it('names a channel with nothing archived', async () => {
    const io = captureIo();
    expect(await simulateArchive({ fromArchive: 'web:nobody', config: configFile }, io, deps())).toBe(1);
    expect(io.stderr()).toBe('web:nobody: no archived messages');
  });
});
