/**
 * Take-backs through the outages of the parts around them, on real processes (`ebb start` from
 * apps/bot/test/ebb-process.ts, the real `ebb worker`) and the careless fake model (what it is shown,
 * it repeats and remembers). In each case a message holding the fact is deleted through the web API,
 * the summaries holding it are being written again when the fault strikes, and the take-back row
 * (Postgres) is what carries the work to whoever finishes it:
 *
 * - the worker that took it over SIGKILLed mid-rewrite, another worker finishing it;
 * - Postgres cut after the tombstone's commit, the bot's rewrite failing to land, and a deletion sent
 *   during the cut (spooled, applied once Postgres is back);
 * - Redis killed and started again empty under the bot, its next turn's prompt built after it.
 *
 * Counted at the end of each: rows holding the fact (messages, spans active and retired, memories,
 * run checkpoints), Redis values holding it, files holding it under the bot's EBB_DATA_DIR, and model
 * requests holding it sent after the last DELETE's 200: all 0, and the take-back's last line says it
 * completed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type SpawnedWorker, spawnEbbWorker } from '@ebb/compaction-worker/test-support';
import { closeRedis, createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, DisposableRedis, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { filesHolding, redisKeysHolding } from '../copies-outside-postgres.js';
import { carelessModel, FACT, type ForgetFixture, holdsFact, startForgetFixture } from '../forget-fixture.js';
import { isPassRequest } from '../small-window.js';
import { type SpawnedEbb, spawnEbb } from '../spawn-ebb.js';

const prefix = randomPrefix();
const producer = createRedis(redisUrl(), { role: 'producer' });
const WAIT = { timeout: 45_000, interval: 200 };

let world: ForgetFixture;
const processes: (SpawnedEbb | SpawnedWorker)[] = [];
const redises: DisposableRedis[] = [];

beforeAll(async () => {
  world = await startForgetFixture();
  await waitForReady(producer);
}, 60_000);

// Each case's processes end with it: a sweep of one must not finish the next one's take-backs.
afterEach(async () => {
  for (const p of processes.splice(0)) {
    p.child.kill('SIGKILL');
    await p.exited;
  }
  for (const redis of redises.splice(0)) await redis.kill();
});

afterAll(async () => {
  world.fake.reply(carelessModel);
  await cleanupPrefix(producer, prefix);
  await producer.quit();
  await world?.close();
});

/**
 * The model's summary calls wait here until `open` (every other call is answered at once); `held`
 * counts the calls that came, so a test knows a rewrite is in flight.
 */
function holdSummaries() {
  let held = 0;
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  world.fake.reply(async (request) => {
    if (isPassRequest(request)) {
      held += 1;
      await opened;
    }
    return carelessModel(request);
  });
  return { held: () => held, open };
}

async function bot(options: Parameters<typeof spawnEbb>[1] = {}): Promise<SpawnedEbb> {
  const spawned = await spawnEbb({ schema: world.schema, prefix, fakeUrl: world.fake.url }, options);
  processes.push(spawned);
  return spawned;
}

async function worker(): Promise<SpawnedWorker> {
  const spawned = await spawnEbbWorker({ databaseUrl: world.databaseUrl, prefix, configToml: world.toml });
  processes.push(spawned);
  return spawned;
}

async function deleteMessage(at: SpawnedEbb, channel: string, id: string) {
  const res = await fetch(`${at.url}/api/channels/${channel}/messages/${id}`, { method: 'DELETE' });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

/** As if the lease of a dead process's claim had run out now (the lease is the contract suite's). */
async function leasesRunOut(key: string): Promise<void> {
  await world.db.execute(sql`update take_backs set claimed_until = now() where channel_key = ${key}`);
}

async function untilCompleted(key: string): Promise<void> {
  await vi.waitFor(
    async () => expect(await world.channels.takeBacks.pendingTakeBacks(key)).toEqual([]),
    WAIT,
  );
}

/**
 * The last `takeback.*` line of `key` that the process logged says it completed (the line follows the
 * row's update: waited for).
 */
async function untilLastSays(at: SpawnedEbb | SpawnedWorker, key: string): Promise<void> {
  const lines = () =>
    'lines' in at
      ? at.lines()
      : at
          .stderr()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
  await vi.waitFor(() => {
    const last = lines()
      .filter((l) => String(l.event).startsWith('takeback.') && l.channel === key)
      .at(-1);
    expect(last).toMatchObject({ event: 'takeback.completed' });
  }, WAIT);
}

/** The fact in no row, no Redis value, no file under `dataDir`, no request sent from `sentFrom` on. */
async function expectGone(key: string, where: { dataDir: string; sentFrom: number; redis?: string }) {
  await world.expectNowhere(key);
  const redis = where.redis === undefined ? producer : createRedis(where.redis, { role: 'producer' });
  try {
    await waitForReady(redis);
    const pattern = where.redis === undefined ? `${prefix}*` : '*';
    expect(await redisKeysHolding(redis, pattern, FACT)).toEqual([]);
  } finally {
    if (redis !== producer) await closeRedis(redis);
  }
  expect(await filesHolding(where.dataDir, FACT)).toEqual([]);
  expect(world.fake.requests.slice(where.sentFrom).filter(holdsFact)).toHaveLength(0);
}

it('a worker SIGKILLed while it writes the summaries again leaves the take-back to the next worker', async () => {
  const key = 'web:tbworker';
  await world.plant(key);
  const dataDir = mkdtempSync(join(tmpdir(), 'ebb-tb-'));
  const summaries = holdSummaries();
  const first = await bot({ dataDir });
  for (const id of ['m4', 'm27'])
    expect(await deleteMessage(first, 'tbworker', id)).toMatchObject({ deleted: true });
  const sentFrom = world.fake.requests.length;

  // The bot's own rewrite is in flight when it dies; the worker that takes the take-back over dies
  // in the middle of its own.
  await vi.waitFor(() => expect(summaries.held()).toBeGreaterThan(0), WAIT);
  first.child.kill('SIGKILL');
  await first.exited;
  const heldBefore = summaries.held();
  await leasesRunOut(key);
  const killed = await worker();
  await vi.waitFor(() => expect(summaries.held()).toBeGreaterThan(heldBefore), WAIT);
  killed.child.kill('SIGKILL');
  await killed.exited;

  await leasesRunOut(key);
  summaries.open();
  const next = await worker();
  await untilCompleted(key);
  await expectGone(key, { dataDir, sentFrom });
  await untilLastSays(next, key);
}, 120_000);

it('Postgres cut after the tombstone commits: the rewrite that could not land and a deletion sent meanwhile both complete', async () => {
  const key = 'web:tbcut';
  await world.plant(key);
  const dataDir = mkdtempSync(join(tmpdir(), 'ebb-tb-'));
  const summaries = holdSummaries();
  const running = await bot({ dataDir, databaseUrl: world.databaseUrl });
  expect(await deleteMessage(running, 'tbcut', 'm4')).toMatchObject({ deleted: true, outcome: 'applied' });
  await vi.waitFor(() => expect(summaries.held()).toBeGreaterThan(0), WAIT);

  // Postgres goes away with the bot's rewrite in flight; the second deletion is kept in the spool
  // (it names an id only), and the rewrite's answer comes back to a store that is not there.
  world.proxy.cut();
  expect(await deleteMessage(running, 'tbcut', 'm27')).toMatchObject({ deleted: true, outcome: 'spooled' });
  const sentFrom = world.fake.requests.length;
  summaries.open();
  await vi.waitFor(() => expect(running.stderr()).toContain('"takeback.failed"'), WAIT);

  world.proxy.restore();
  await leasesRunOut(key);
  await vi.waitFor(async () => {
    const [m27] = await world.channels.readArchive(key, 27, 27);
    expect(m27?.text).not.toContain(FACT);
  }, WAIT);
  await untilCompleted(key);
  await expectGone(key, { dataDir, sentFrom });
  await untilLastSays(running, key);
}, 120_000);

it('Redis killed and started again empty: the take-back completes and the next prompt holds nothing of it', async () => {
  const key = 'web:tbredis';
  await world.plant(key);
  const dataDir = mkdtempSync(join(tmpdir(), 'ebb-tb-'));
  const redis = await DisposableRedis.start();
  redises.push(redis);
  const summaries = holdSummaries();
  const running = await bot({ dataDir, redisUrl: redis.url });
  for (const id of ['m4', 'm27'])
    expect(await deleteMessage(running, 'tbredis', id)).toMatchObject({ deleted: true });
  const sentFrom = world.fake.requests.length;
  await vi.waitFor(() => expect(summaries.held()).toBeGreaterThan(0), WAIT);

  await redis.kill();
  await redis.restart();
  summaries.open();
  await untilCompleted(key);

  const res = await fetch(`${running.url}/api/channels/tbredis/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: 'ana', text: 'what was the vault code again?', id: 'm31' }),
  });
  expect(res.status).toBe(200);
  const prompts = world.fake.requests.slice(sentFrom).filter((r) => !isPassRequest(r));
  expect(prompts.length).toBeGreaterThan(0);
  await expectGone(key, { dataDir, sentFrom, redis: redis.url });
  await untilLastSays(running, key);
}, 120_000);
