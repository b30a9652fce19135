/**
 * SIGTERM under load, to a real `ebb start` process (apps/bot/test/ebb-process.ts): 50 requests in
 * flight over 5 channels, each channel with its turns queued behind one another, and more posted
 * just after the signal. Every request sent before the signal is answered and archived once; a
 * request after it is answered and archived, or refused (503 or a refused connection) so the client
 * knows to send it again; nothing is acknowledged and then lost; the process exits 0.
 */
import type { ChildProcess } from 'node:child_process';
import { PgChannelStore } from '@ebb/db';
import { freshSchemaDb } from '@ebb/db/test-support';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { spawnEbb } from '../spawn-ebb.js';

const CHANNELS = 5;
const PER_CHANNEL = 10;
const LATE = 10;

let fake: FakeOpenAiServer;
let fresh: Awaited<ReturnType<typeof freshSchemaDb>>;
let child: ChildProcess | undefined;
const prefix = randomPrefix();

beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  let n = 0;
  fake.reply(() => ({ content: `ack ${++n}` }));
  // Each answer takes 300 ms, so a channel's ten queued turns take about 3 s.
  fake.fail({ kind: 'slow', delayMs: 300 }, { when: () => true });
  fresh = await freshSchemaDb();
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await dropPrefix(prefix);
  await fresh?.close();
  await fake?.close();
});

type Outcome = 'answered' | 'refused' | 'reset';

async function post(url: string, channel: string, id: string): Promise<Outcome> {
  try {
    const res = await fetch(`${url}/api/channels/${channel}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ author: 'ana', text: `message ${id}`, id }),
    });
    const body = (await res.json()) as { reply?: string | null; code?: string };
    if (res.status === 200 && body.reply?.startsWith('ack ')) return 'answered';
    expect([res.status, body.code]).toEqual([503, 'shutting_down']);
    return 'refused';
  } catch (err) {
    // A refused connection is a refusal too; a reset of an accepted request is the failure this test is for.
    return (err as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED' ? 'refused' : 'reset';
  }
}

it(`answers and archives the ${CHANNELS * PER_CHANNEL} requests in flight at SIGTERM, then exits 0`, async () => {
  const ebb = await spawnEbb({ schema: fresh.schema, prefix, fakeUrl: fake.url });
  child = ebb.child;
  const { url, exited } = ebb;

  const inFlight: { channel: string; id: string; outcome: Promise<Outcome> }[] = [];
  for (let c = 0; c < CHANNELS; c++) {
    for (let i = 0; i < PER_CHANNEL; i++) {
      const channel = `s${c}`;
      const id = `${channel}-${i}`;
      inFlight.push({ channel, id, outcome: post(url, channel, id) });
    }
  }
  // Every channel is inside a model call, with the rest of its turns queued behind it.
  await vi.waitFor(() => expect(fake.completionRequests.length).toBeGreaterThanOrEqual(CHANNELS), {
    timeout: 10_000,
  });
  child.kill('SIGTERM');
  const late = Array.from({ length: LATE }, (_, i) => {
    const channel = `s${i % CHANNELS}`;
    const id = `${channel}-late-${i}`;
    return { channel, id, outcome: post(url, channel, id) };
  });

  const outcomes = await Promise.all(inFlight.map((r) => r.outcome));
  const lateOutcomes = await Promise.all(late.map((r) => r.outcome));
  expect(await exited).toBe(0);

  const channels = new PgChannelStore({ db: fresh.db });
  const archived = new Map<string, number>();
  for (let c = 0; c < CHANNELS; c++) {
    const key = `web:s${c}`;
    const archive = await channels.readArchive(key, 1, (await channels.loadPrefix(key)).headSeq);
    for (const m of archive.filter((m) => m.role === 'user')) {
      const id = m.text.replace(/^message /, '');
      archived.set(id, (archived.get(id) ?? 0) + 1);
    }
  }
  const all = [...inFlight, ...late];
  const outcomeOf = [...outcomes, ...lateOutcomes];
  const acknowledged = all.filter((_, i) => outcomeOf[i] === 'answered');
  const duplicated = [...archived.values()].filter((n) => n > 1).length;
  console.info(
    `SIGTERM with ${inFlight.length} requests in flight: sent ${all.length}, acknowledged ${acknowledged.length}, ` +
      `refused ${outcomeOf.filter((o) => o === 'refused').length} (all after the signal), ` +
      `reset ${outcomeOf.filter((o) => o === 'reset').length}, archived ${archived.size}, duplicated ${duplicated}`,
  );
  expect(outcomes).toEqual(inFlight.map(() => 'answered'));
  expect(lateOutcomes).not.toContain('reset');
  // Acknowledged = archived, once each; nothing refused was archived.
  expect([...archived.keys()].sort()).toEqual(acknowledged.map((r) => r.id).sort());
  expect(duplicated).toBe(0);
  expect(ebb.stderr()).toContain('"msg":"Ebb stopped"');
}, 60_000);
