/**
 * Take-backs under the faults that used to leave the text behind, on a real `ebb start` process
 * (apps/bot/test/ebb-process.ts), the worker's real compaction processor and the careless fake model
 * (what it is shown, it repeats and remembers):
 *
 * - a compaction pass is in flight over the message (its summarizer call held for as long as the test
 *   likes: a pass that takes minutes), the message is deleted through the web API, and the bot is
 *   SIGKILLed right after the 200, its own rewrite of the summary cut off mid-call. The pass must not
 *   land what it read; the take-back row outlives the bot and a restarted `ebb start` finishes it.
 *
 * Counted at the end: rows holding the fact (messages, spans active and retired, memories, run
 * checkpoints), Redis keys under the test's prefix holding it, files under the bot's EBB_DATA_DIR
 * holding it, and model requests sent after the DELETE's 200 holding it: all 0, and the last
 * take-back line says it completed.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rowsOf } from '@ebb/db';
import { createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { filesHolding, redisKeysHolding } from '../copies-outside-postgres.js';
import { carelessModel, FACT, type ForgetFixture, holdsFact, startForgetFixture } from '../forget-fixture.js';
import { isPassRequest } from '../small-window.js';
import { type SpawnedEbb, spawnEbb } from '../spawn-ebb.js';

const KEY = 'web:kill1';
const prefix = randomPrefix();
const producer = createRedis(redisUrl(), { role: 'producer' });

let world: ForgetFixture;
const spawned: SpawnedEbb[] = [];

beforeAll(async () => {
  world = await startForgetFixture();
  await waitForReady(producer);
}, 60_000);

afterAll(async () => {
  for (const ebb of spawned) ebb.child.kill('SIGKILL');
  await cleanupPrefix(producer, prefix);
  await producer.quit();
  await world?.close();
});

it('a pass in flight and a bot SIGKILLed right after the 200 leave the deleted text nowhere', async () => {
  await world.plant(KEY);
  const { schema } = world;
  // The model holds the pass's summary call (it holds the fact) until released, and the first bot's
  // own rewrite for ever (it dies before an answer); every other call is answered at once.
  let releasePass = () => {};
  const passHeld = new Promise<void>((resolve) => {
    releasePass = resolve;
  });
  let firstBotAlive = true;
  let unblock = () => {};
  const never = new Promise<void>((resolve) => {
    unblock = resolve;
  });
  world.fake.reply(async (request) => {
    if (isPassRequest(request) && holdsFact(request)) await passHeld;
    else if (isPassRequest(request) && firstBotAlive) await never;
    return carelessModel(request);
  });

  // A pass over the raw messages 21..30 (seq 27 repeats the fact), in flight: its request, holding
  // the fact, went out before the DELETE.
  const sentBefore = world.fake.requests.length;
  const pass = world.processor({
    jobId: 'kill1-pass',
    channelKey: KEY,
    tier: 'background',
    fromSeq: 21,
    toSeq: 30,
    generation: await world.channels.generation(KEY),
    attempt: 1,
  });
  await vi.waitFor(() => expect(world.fake.requests.slice(sentBefore).some(holdsFact)).toBe(true), {
    timeout: 20_000,
  });

  const dataDir = mkdtempSync(join(tmpdir(), 'ebb-tb-'));
  const bot = await spawnEbb({ schema, prefix, fakeUrl: world.fake.url }, { dataDir });
  spawned.push(bot);
  for (const id of ['m4', 'm27']) {
    const res = await fetch(`${bot.url}/api/channels/kill1/messages/${id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id, deleted: true, outcome: 'applied' });
  }
  const answeredAt = world.fake.requests.length;
  bot.child.kill('SIGKILL');
  await bot.exited;
  firstBotAlive = false;
  unblock();

  // The bot died holding its take-backs' claims; as if their 30 s lease had run out now (the lease
  // itself is the contract's: packages/db/test/contract/take-back-log.ts).
  const pending = await world.channels.takeBacks.pendingTakeBacks(KEY);
  expect(pending.length).toBeGreaterThan(0);
  await world.db.execute(sql`update take_backs set claimed_until = now() where channel_key = ${KEY}`);

  // A restarted bot's first sweep finishes them, with the pass still in flight.
  const restarted = await spawnEbb({ schema, prefix, fakeUrl: world.fake.url }, { dataDir });
  spawned.push(restarted);
  await vi.waitFor(async () => expect(await world.channels.takeBacks.pendingTakeBacks(KEY)).toEqual([]), {
    timeout: 30_000,
    interval: 200,
  });
  expect(restarted.stderr()).toContain('"takeback.completed"');

  // Only now does the pass's model answer (minutes later, for all it knows): it must not land,
  // store or checkpoint what it read, and starts again from the redacted archive.
  releasePass();
  const landed = await pass;

  await world.expectNowhere(KEY);
  expect(await redisKeysHolding(producer, `${prefix}*`, FACT)).toEqual([]);
  expect(await filesHolding(dataDir, FACT)).toEqual([]);
  expect(world.fake.requests.slice(answeredAt).filter(holdsFact)).toHaveLength(0);
  expect(landed).toMatchObject({ kind: 'completed', outcome: { kind: 'splice' } });
  const completed = rowsOf<{ n: number }>(
    await world.db.execute(
      sql`select count(*)::int as n from take_backs where channel_key = ${KEY} and status = 'completed'`,
    ),
  );
  expect(completed[0]?.n).toBe(pending.length);
  world.fake.reply(carelessModel);
}, 120_000);
