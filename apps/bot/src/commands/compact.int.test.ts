/**
 * `ebb compact` against the real Postgres stores and the real BullMQ queue (a fresh Redis prefix):
 * the job lands in the queue the workers read, with its run row; a second call finds it in flight;
 * unknown channels, protected contexts and an unreachable Redis are refused with a reason.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewMessage } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { BullmqCompactionQueue, createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { captureIo } from '../../test/capture-io.js';
import { compact } from './compact.js';

const dir = mkdtempSync(join(tmpdir(), 'ebb-compact-'));
const configFile = join(dir, 'config.toml');
// A summary budget small beside the 2,000-token channel below, so a pass has something to free.
writeFileSync(configFile, '[compaction]\nprotect_recent = 4\nsummary_max_tokens = 200\n');

const capture = captureIo;

function message(i: number): NewMessage {
  return { role: 'user', author: 'ana', text: `message ${i}`, tokens: 100, contextTokens: 100 };
}

let pg: FreshSchemaDb;
let channels: PgChannelStore;
let runs: PgRunStore;
let redis: Redis;
let prefix: string;
let queue: BullmqCompactionQueue;

beforeAll(async () => {
  pg = await freshSchemaDb();
  channels = new PgChannelStore({ db: pg.db });
  runs = new PgRunStore({ db: pg.db });
  redis = createRedis(redisUrl(), { role: 'producer' });
  await waitForReady(redis);
});
afterAll(async () => {
  await redis?.quit();
  await pg?.close();
});
beforeEach(() => {
  prefix = randomPrefix();
  // The queue as a worker sees it, to look at what `ebb compact` left there.
  queue = new BullmqCompactionQueue({ connection: redis, prefix });
});
afterEach(async () => {
  await queue.close();
  await cleanupPrefix(redis, prefix);
});

const deps = (env: NodeJS.ProcessEnv = {}) => ({
  database: pg.database,
  env: { REDIS_URL: redisUrl(), EBB_REDIS_PREFIX: prefix, ...env },
  cwd: dir,
});

describe('ebb compact', () => {
  it('enqueues a manual pass with its focus, records its run, and finds it in flight the second time', async () => {
    const key = 'web:busy';
    for (let i = 1; i <= 20; i++) await channels.append(key, message(i));

    const io = capture();
    const code = await compact({ channel: key, focus: 'the deploy plan', config: configFile }, io, deps());
    expect(io.stderr()).toBe('');
    expect(code).toBe(0);
    const jobId = /: (\S+)$/.exec(io.stdout())?.[1];
    // It frees what a background pass would: under the default working size, working_fraction (70%)
    // of the 2,000 tokens plus the summary, as far as the 4 protected messages allow.
    expect(io.stdout()).toBe(
      `Compaction of ${key} queued (messages #1–#16), focus: the deploy plan: ${jobId}`,
    );

    // In the BullMQ queue the workers read, under the deployment's prefix.
    const job = await queue.bullmq.getJob(String(jobId));
    expect(job?.data).toEqual({
      channelKey: key,
      tier: 'background',
      fromSeq: 1,
      toSeq: 16,
      generation: 0,
      focus: 'the deploy plan',
    });
    expect(await queue.inFlight(key)).toMatchObject([{ jobId, fromSeq: 1, toSeq: 16 }]);
    expect(await runs.get(String(jobId))).toMatchObject({
      jobId,
      channelKey: key,
      tier: 'background',
      status: 'queued',
      fromSeq: 1,
      toSeq: 16,
    });

    const again = capture();
    expect(await compact({ channel: key, config: configFile }, again, deps())).toBe(0);
    expect(again.stdout()).toBe(`A pass of ${key} is already queued or running: ${jobId}`);
    expect(await queue.bullmq.getJobCounts()).toMatchObject({ prioritized: 1, waiting: 0 });
  });

  it('refuses a channel it has never stored, and enqueues nothing', async () => {
    const io = capture();
    expect(await compact({ channel: 'web:nobody', config: configFile }, io, deps())).toBe(1);
    expect(io.stdout()).toBe('');
    expect(io.stderr()).toContain('no channel web:nobody in the database');
    expect(io.stderr()).toContain('`ebb status` lists the channels');
    expect(Object.values(await queue.bullmq.getJobCounts()).every((n) => n === 0)).toBe(true);
  });

  it('says why nothing was enqueued when every message is protected', async () => {
    const key = 'web:quiet';
    for (let i = 1; i <= 3; i++) await channels.append(key, message(i));
    const io = capture();
    expect(await compact({ channel: key, config: configFile }, io, deps())).toBe(1);
    expect(io.stderr()).toBe(
      `ebb compact: nothing enqueued for ${key}: every message in its context is among the 4 newest, ` +
        'which are never compacted (compaction.protect_recent).',
    );
    expect(await runs.recent(key, 5)).toEqual([]);
  });

  it('says why nothing was enqueued when the messages a pass may take hold no more than its summary', async () => {
    const key = 'web:short';
    // 6 messages of 100 tokens, the newest 4 protected: 200 tokens, no more than a 200-token summary.
    for (let i = 1; i <= 6; i++) await channels.append(key, message(i));
    const io = capture();
    expect(await compact({ channel: key, config: configFile }, io, deps())).toBe(1);
    expect(io.stderr()).toBe(
      `ebb compact: nothing enqueued for ${key}: the messages a pass may take (all but the 4 newest) hold ` +
        'no more than a summary of up to 200 tokens, so summarizing them would not make the context ' +
        'smaller; it will once more messages have come in.',
    );
    expect(await runs.recent(key, 5)).toEqual([]);
  });

  it('says so and exits 1 when Redis is unreachable', async () => {
    const key = 'web:offline';
    for (let i = 1; i <= 20; i++) await channels.append(key, message(i));
    const io = capture();
    const code = await compact(
      { channel: key, config: configFile },
      io,
      deps({ REDIS_URL: 'redis://127.0.0.1:1' }),
    );
    expect(code).toBe(1);
    expect(io.stderr()).toContain('no Redis answers at 127.0.0.1:1 (REDIS_URL)');
    expect(io.stderr()).toContain('/compact');
    expect(await runs.recent(key, 5)).toEqual([]);
  });

  it('refuses a focus longer than a job carries', async () => {
    const io = capture();
    expect(await compact({ channel: 'web:busy', focus: 'x'.repeat(501) }, io, deps())).toBe(1);
    expect(io.stderr()).toMatch(/^ebb compact: --focus: .*500/);
  });
});
