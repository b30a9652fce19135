/**
 * SIGTERM past the grace period, to a real `ebb start` process (apps/bot/test/ebb-process.ts): one
 * web channel with more turns queued than the grace period lets finish (each model answer takes
 * 1 s; grace 2 s). Every request gets an HTTP answer (none is reset): the turns that finish answer
 * 200 and are archived; those not started by the deadline answer 503 `shutting_down` and are not
 * archived; nothing runs or is logged after "Ebb stopped", and the process exits 0.
 */
import type { ChildProcess } from 'node:child_process';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { spawnEbb } from '../spawn-ebb.js';

const QUEUED = 12;

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let child: ChildProcess | undefined;
const prefix = randomPrefix();
/** Resolves at the first model call: a turn is running, the others queued behind it. */
let firstCall: Promise<void>;

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  let n = 0;
  firstCall = new Promise<void>((called) => {
    fake.reply(() => {
      called();
      return { content: `ack ${++n}` };
    });
  });
  fake.fail({ kind: 'slow', delayMs: 1_000 }, { when: () => true });
  fresh = await freshSchemaDb();
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
});

type Outcome = { id: string; status: number | 'reset'; code?: string; retryAfter?: string };

async function post(url: string, id: string): Promise<Outcome> {
  try {
    const res = await fetch(`${url}/api/channels/busy/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: `message ${id}`, id }),
    });
    const body = (await res.json()) as { code?: string };
    const retryAfter = res.headers.get('retry-after');
    return {
      id,
      status: res.status,
      ...(body.code === undefined ? {} : { code: body.code }),
      ...(retryAfter === null ? {} : { retryAfter }),
    };
  } catch {
    return { id, status: 'reset' };
  }
}

it(`answers every one of ${QUEUED} requests queued in one channel past the grace period, resetting none`, async () => {
  const ebb = await spawnEbb(
    { schema: fresh.schema, prefix, fakeUrl: fake.url },
    { web: ['[web]', 'rate_limit_per_minute = 0', '[shutdown]', 'grace_seconds = 2'] },
  );
  child = ebb.child;
  const requests = Array.from({ length: QUEUED }, (_, i) => post(ebb.url, `q${i}`));
  await firstCall;
  child.kill('SIGTERM');
  const outcomes = await Promise.all(requests);
  expect(await ebb.exited).toBe(0);

  const channels = new PgChannelStore({ db: fresh.db });
  const archive = await channels.readArchive('web:busy', 1, (await channels.loadPrefix('web:busy')).headSeq);
  const archived = archive.filter((m) => m.role === 'user').map((m) => m.text.replace(/^message /, ''));
  const log = ebb.stderr();
  // From the line that says it (a JSON line) to the end.
  const stopped = log.slice(log.lastIndexOf('\n', log.indexOf('"msg":"Ebb stopped"')) + 1);
  const { ms } = JSON.parse(stopped.split('\n')[0] ?? '{}') as { ms?: number };
  console.info(
    `past the grace: ${JSON.stringify(outcomes)}; archived ${JSON.stringify(archived)}; stopped in ${ms} ms`,
  );
  expect(outcomes.filter((o) => o.status === 'reset')).toEqual([]);
  // Acknowledged = archived (in the order the requests arrived, which need not be q0, q1, …);
  // refused = not archived, with the code that says why.
  expect(
    outcomes
      .filter((o) => o.status === 200)
      .map((o) => o.id)
      .sort(),
  ).toEqual([...archived].sort());
  for (const refused of outcomes.filter((o) => o.status !== 200))
    expect(refused).toMatchObject({ status: 503, code: 'shutting_down', retryAfter: expect.any(String) });
  expect(outcomes.filter((o) => o.status === 503).length).toBeGreaterThan(0);
  // Nothing after "Ebb stopped": no turn ran against the closed stores.
  expect(stopped.trim().split('\n')).toHaveLength(1);
}, 60_000);
