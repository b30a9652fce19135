/**
 * Two bot replicas (two `startEbb`, each with its own Postgres pool and a worker) on one Postgres
 * and Redis: messages of one channel spread over both by a load balancer, then every message
 * delivered to both at once (a platform event both receive). Every message is archived once and
 * answered once, in the order sent; no pass is left stuck. Prints its row of RELIABILITY.md.
 */
import { loadEnv } from '@ebb/config';
import { createDb, PgChannelStore, PgRunStore } from '@ebb/db';
import { freshSchemaDb, testDatabaseUrl } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { afterAll, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { smallWindowConfig, startAckingModel } from '../small-window.js';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
}, 30_000);

const SPREAD = 150;
const BOTH = 50;

it('two replicas archive and answer every message once, in order', async () => {
  const fake = await startAckingModel();
  closers.push(() => fake.close());
  const fresh = await freshSchemaDb();
  closers.push(() => fresh.close());
  const secondPool = await createDb({ databaseUrl: testDatabaseUrl(), schema: fresh.schema });
  closers.push(() => secondPool.close());
  const prefix = randomPrefix();
  closers.push(() => dropPrefix(prefix));
  const replica = async (database: typeof secondPool): Promise<RunningEbb> => {
    const ebb = await startEbb({
      config: () => smallWindowConfig(fake.url, ['[web.bot]', 'respond_to = "all"']),
      env: loadEnv({ OPENAI_API_KEY: 'k', EBB_REDIS_PREFIX: prefix }),
      logger: createLogger({ level: 'silent' }),
      withWorker: true,
      webPort: 0,
      database,
      processMetrics: false,
    });
    closers.push(() => ebb.close());
    return ebb;
  };
  const replicas = [await replica(fresh.database), await replica(secondPool)];

  const post = async (ebb: RunningEbb, i: number) => {
    const res = await fetch(`${ebb.web.url}/api/channels/shared/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        author: 'ana',
        text: `update ${i}: ${'status green, '.repeat(20)}`,
        id: `m-${i}`,
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { reply: string | null; duplicate?: boolean };
  };
  let acknowledged = 0;
  // A load balancer: each message to one replica, in turn.
  for (let i = 0; i < SPREAD; i++) {
    expect(await post(replicas[i % 2] as RunningEbb, i)).toMatchObject({
      reply: expect.stringMatching(/^ack /),
    });
    acknowledged++;
  }
  // The same event delivered to both replicas at once: one answers it, the other sees a duplicate.
  let firsts = 0;
  for (let i = SPREAD; i < SPREAD + BOTH; i++) {
    const answers = await Promise.all(replicas.map((ebb) => post(ebb, i)));
    acknowledged++;
    firsts += answers.filter((a) => a.duplicate !== true).length;
  }

  const runs = new PgRunStore({ db: fresh.db });
  await vi.waitFor(
    async () => expect(await runs.unfinished({ createdBefore: Date.now() + 60_000, limit: 100 })).toEqual([]),
    { timeout: 30_000, interval: 200 },
  );
  const channels = new PgChannelStore({ db: fresh.db });
  const archive = await channels.readArchive(
    'web:shared',
    1,
    (await channels.loadPrefix('web:shared')).headSeq,
  );
  const users = archive.filter((m) => m.role === 'user').map((m) => m.text.split(':')[0]);
  const replies = archive.filter((m) => m.role === 'assistant').length;
  const chatRequests = fake.completionRequests.filter(
    (r) => !(r.body as { response_format?: unknown }).response_format,
  ).length;
  const sent = SPREAD + BOTH;
  console.info(
    `two replicas: sent ${sent} (${BOTH} to both at once), acknowledged ${acknowledged}, archived ${new Set(users).size}, ` +
      `duplicated ${users.length - new Set(users).size}, answered ${chatRequests}, replies archived ${replies}, ` +
      `passes ${(await runs.recent('web:shared', 1_000)).length}, stuck 0`,
  );
  expect(firsts).toBe(BOTH);
  expect(users).toEqual(Array.from({ length: sent }, (_, i) => `update ${i}`));
  expect(chatRequests).toBe(sent);
  expect(replies).toBe(sent);
}, 120_000);
