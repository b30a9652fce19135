/**
 * Three real `ebb start` processes (apps/bot/test/ebb-process.ts) on one Postgres schema, one Redis
 * prefix and one fake OpenAI (every chat reply after 300 ms), serving ONE web channel the way the
 * README's "several `ebb start` behind a load balancer" does: two senders at once, each sequential
 * (the next message only after the previous answer), each message to a replica drawn at random
 * (seeded). Then a replica is SIGKILLed mid-turn (its model call held at the fake) and the same
 * message (same id) is sent again to another replica, as a client retrying a reset request would.
 *
 * The fake names, in each reply, the message it answers (the prompt's last user message) and the
 * request it answers (`ack <id> r<request index>`), so every answer leads back to its prompt.
 * Counted from the fake's requests (compaction passes skipped; with the default 128k window there are
 * none, and no worker runs) and the archive (`readArchive`):
 *
 * - stale prompts: a prompt for message m missing m, or missing a message acknowledged (its 200
 *   received) before m was sent;
 * - prompts holding a user message after the one they answer;
 * - replies archived after the next user message (user m, another user message, then m's reply);
 * - messages archived other than once (lost, duplicated), answered (a reply naming them) other
 *   than once, answers naming another message;
 * - the SIGKILL: the retry is answered as a redelivery (`duplicate: true`), its prompt holds it and
 *   everything acknowledged before it, and how long the retry waited.
 *
 * All counts 0, and the retry answered within `RETRY_BOUND_MS` (5 s: the dead turn's channel
 * lease runs out within 3 s of the kill; see the constant).
 * Before the channel leases and `pinContext` (commit 3059020) the same run
 * counted 54 replies archived after the next message, 1 prompt holding a later message and 1 answer
 * naming another message. Prints its row of RELIABILITY.md. `EBB_REPLICA_MESSAGES=1000` runs the
 * longer soak (default 60: about 25 s).
 */
import { PgChannelStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { createRedis, waitForReady } from '@ebb/queue';
import { cleanupPrefix, randomPrefix, redisUrl } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import { seededRandom } from '@ebb/testing/seeded-random';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isPassRequest, passReply } from '../small-window.js';
import { type SpawnedEbb, spawnEbb } from '../spawn-ebb.js';

const MESSAGES = Number(process.env.EBB_REPLICA_MESSAGES ?? 60);
const REPLICAS = 3;
const MODEL_LATENCY_MS = 300;
/** Messages each sender posts after the SIGKILL, to the two replicas left: the channel goes on. */
const AFTER_KILL = 2;
/**
 * The retry's wait: the done-when of issue 35. The retry's turn waits for the dead replica's channel
 * lease (3 s TTL, renewed every second; a waiter asks again just past the holder's expiry), then
 * answers under its own lease (no answer claim to wait for there) with its 300 ms model call.
 * Measured: the prompt at the model 2.6–2.7 s after the retry, the answer 3.0 s after (load 2–3).
 * While the retry also waited for the dead turn's answer claim (5 s TTL) it was 5.02–5.04 s.
 */
const RETRY_BOUND_MS = 5_000;
const CHANNEL = 'shared';
const KEY = `web:${CHANNEL}`;
/** The id each message carries in its text, and the fake's reply names. */
const TAG = /\[(m-[a-z]+-\d+)\]/;
const TEST_TIMEOUT_MS = Math.max(240_000, MESSAGES * 2_000);

/** The ids of a chat request's user messages, in prompt order. */
function promptIds(request: RecordedRequest): string[] {
  return (request.body.messages as { role: string; content?: unknown }[])
    .filter((m) => m.role === 'user' && typeof m.content === 'string')
    .map((m) => TAG.exec(m.content as string)?.[1])
    .filter((id): id is string => id !== undefined);
}

interface Sent {
  readonly id: string;
  readonly text: string;
  /** Messages acknowledged before this one was sent. */
  readonly ackedBefore: readonly string[];
  status?: number;
  reply?: string | null;
  duplicate?: boolean;
}

interface Answer {
  readonly status: number;
  readonly reply?: string | null;
  readonly duplicate?: boolean;
  readonly code?: string;
}

const prefix = randomPrefix();
const producer = createRedis(redisUrl(), { role: 'producer' });
const replicas: SpawnedEbb[] = [];
let fake: FakeOpenAiServer;
let fresh: FreshSchemaDb;
/** When the fake received each request, by index. */
const receivedAt = new Map<number, number>();

/** The one chat request to hold (the SIGKILL's), released once its replica is dead. */
const held = {
  id: '',
  arrived: () => {},
  release: () => {},
};

beforeAll(async () => {
  await waitForReady(producer);
  fake = await FakeOpenAiServer.start({
    latencyMs: (request) => {
      receivedAt.set(request.index, performance.now());
      return isPassRequest(request) ? 0 : MODEL_LATENCY_MS;
    },
  });
  fake.reply(async (request) => {
    const pass = passReply(request, { summary: 'Earlier: status updates.', memories: [] });
    if (pass) return pass;
    const id = promptIds(request).at(-1) ?? 'none';
    if (id === held.id) {
      held.id = '';
      const released = new Promise<void>((resolve) => {
        held.release = resolve;
      });
      held.arrived();
      await released;
    }
    return { content: `ack ${id} r${request.index}` };
  });
  fresh = await freshSchemaDb();
  for (let i = 0; i < REPLICAS; i++)
    replicas.push(await spawnEbb({ schema: fresh.schema, prefix, fakeUrl: fake.url }));
}, 180_000);

afterAll(async () => {
  for (const ebb of replicas) {
    if (ebb.child.exitCode !== null || ebb.child.signalCode !== null) continue;
    ebb.child.kill('SIGTERM');
    const stopped = await Promise.race([
      ebb.exited.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 20_000).unref()),
    ]);
    if (!stopped) ebb.child.kill('SIGKILL');
  }
  held.release();
  await cleanupPrefix(producer, prefix);
  await producer.quit();
  await fake?.close();
  await fresh?.close();
}, 60_000);

async function post(ebb: SpawnedEbb, message: Sent): Promise<Answer> {
  const res = await fetch(`${ebb.url}/api/channels/${CHANNEL}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: message.id.split('-')[1], text: message.text, id: message.id }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, ...((await res.json()) as Omit<Answer, 'status'>) };
}

it(
  'three ebb processes serve one channel as one: every prompt current, every reply in place, a SIGKILL retried',
  async () => {
    const sent: Sent[] = [];
    const acked: string[] = [];
    const message = (id: string): Sent => {
      const made = {
        id,
        text: `[${id}] update from ${id.split('-')[1]}: status green`,
        ackedBefore: [...acked],
      };
      sent.push(made);
      return made;
    };
    const record = (m: Sent, answer: Answer) => {
      m.status = answer.status;
      m.reply = answer.reply ?? null;
      m.duplicate = answer.duplicate === true;
      if (answer.status === 200) acked.push(m.id);
    };
    /** One sender: `count` messages, each after the previous answer, each to a replica at random. */
    const sender = async (
      name: string,
      from: number,
      count: number,
      to: readonly SpawnedEbb[],
      seed: number,
    ) => {
      const random = seededRandom(seed);
      for (let i = from; i < from + count; i++) {
        const m = message(`m-${name}-${i}`);
        const ebb = to[Math.floor(random() * to.length)] as SpawnedEbb;
        record(m, await post(ebb, m));
      }
    };

    // Two senders at once.
    const half = Math.ceil(MESSAGES / 2);
    await Promise.all([sender('a', 0, half, replicas, 1), sender('b', 0, MESSAGES - half, replicas, 2)]);

    // A replica dies mid-turn: its model call is held at the fake, then SIGKILL, then the client
    // sends the same message again to another replica.
    const [victim, ...survivors] = replicas as [SpawnedEbb, ...SpawnedEbb[]];
    const killed = message('m-k-0');
    const arrived = new Promise<void>((resolve) => {
      held.arrived = resolve;
    });
    held.id = killed.id;
    const firstTry = post(victim, killed).catch((err: unknown) => err);
    await arrived;
    victim.child.kill('SIGKILL');
    await victim.exited;
    held.release();
    expect(await firstTry).toBeInstanceOf(Error);
    const retriedAt = performance.now();
    const retried = await post(survivors[0] as SpawnedEbb, killed);
    const retryMs = Math.round(performance.now() - retriedAt);
    record(killed, retried);
    const retryIndex = Number(/ r(\d+)$/.exec(retried.reply ?? '')?.[1]);
    const retryPromptMs = Math.round((receivedAt.get(retryIndex) ?? Number.NaN) - retriedAt);

    // The channel goes on, on the two left.
    await Promise.all([
      sender('a', half, AFTER_KILL, survivors, 3),
      sender('b', MESSAGES - half, AFTER_KILL, survivors, 4),
    ]);

    // What the model was shown, by request index.
    const chats = new Map(fake.completionRequests.filter((r) => !isPassRequest(r)).map((r) => [r.index, r]));
    const channels = new PgChannelStore({ db: fresh.db });
    const archive = await channels.readArchive(KEY, 1, (await channels.loadPrefix(KEY)).headSeq);
    const idOf = (text: string) => TAG.exec(text)?.[1];
    const archivedTimes = new Map<string, number>();
    for (const m of archive)
      if (m.role === 'user') {
        const id = idOf(m.text) ?? '';
        archivedTimes.set(id, (archivedTimes.get(id) ?? 0) + 1);
      }
    const answeredTimes = new Map<string, number>();
    for (const m of archive)
      if (m.role === 'assistant') {
        const id = /^ack (\S+) r\d+$/.exec(m.text)?.[1] ?? '';
        answeredTimes.set(id, (answeredTimes.get(id) ?? 0) + 1);
      }

    let stale = 0;
    let later = 0;
    let replyAfterNext = 0;
    let namingAnother = 0;
    let unanswered = 0;
    let killedPromptComplete = false;
    for (const m of sent) {
      const index = /^ack \S+ r(\d+)$/.exec(m.reply ?? '')?.[1];
      const request = index === undefined ? undefined : chats.get(Number(index));
      if (!request) {
        unanswered++;
        continue;
      }
      if (!(m.reply ?? '').startsWith(`ack ${m.id} `)) namingAnother++;
      const ids = promptIds(request);
      const shown = new Set(ids);
      const complete = shown.has(m.id) && m.ackedBefore.every((id) => shown.has(id));
      if (!complete) stale++;
      if (m === killed) killedPromptComplete = complete;
      const at = ids.indexOf(m.id);
      if (at >= 0 && at < ids.length - 1) later++;
      // In the archive: m, then its reply, with no user message between.
      const userAt = archive.findIndex((a) => a.role === 'user' && idOf(a.text) === m.id);
      const replyAt = archive.findIndex((a) => a.role === 'assistant' && a.text === m.reply);
      if (userAt < 0 || replyAt < 0) unanswered++;
      else if (archive.slice(userAt + 1, replyAt).some((a) => a.role === 'user') || replyAt < userAt)
        replyAfterNext++;
    }
    // How the survivors' copies of the channel followed the others' turns: by the appends they
    // heard (no read), by reading the tail, or by reading the whole context again.
    const followed = { heard: 0, tails: 0, reloads: 0 };
    for (const ebb of survivors) {
      const text = await (await fetch(`${ebb.url}/metrics`)).text();
      const count = (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      followed.heard += count('ebb_context_cache_appends_heard_total');
      followed.tails += count('ebb_context_cache_delta_loads_total');
      followed.reloads += count('ebb_context_cache_reloads_total');
    }
    const lost = sent.filter((m) => !archivedTimes.has(m.id)).length;
    const duplicated = [...archivedTimes.values()].reduce((n, times) => n + times - 1, 0);
    const answeredOnce = sent.filter((m) => answeredTimes.get(m.id) === 1).length;
    const acknowledged = sent.filter((m) => m.status === 200).length;
    console.info(
      `three replicas (ebb start ×3, 2 senders at once on one channel, ${MODEL_LATENCY_MS} ms model): sent ${sent.length} ` +
        `(1 retried after a SIGKILL mid-turn), acknowledged ${acknowledged}, archived ${archivedTimes.size}, lost ${lost}, ` +
        `duplicated ${duplicated}, answered once ${answeredOnce}, unanswered ${unanswered}, answers naming another message ${namingAnother}, ` +
        `stale prompts ${stale}, prompts holding a later message ${later}, replies archived after the next message ${replyAfterNext}; ` +
        `SIGKILL retry: duplicate ${retried.duplicate === true}, prompt complete ${killedPromptComplete}, its prompt at the model ${retryPromptMs} ms and its answer ${retryMs} ms after the retry ` +
        `(chat requests ${chats.size}); the survivors' caches caught up ${followed.heard} times by appends heard, ${followed.tails} by tail, ${followed.reloads} by reload`,
    );

    expect(acknowledged).toBe(sent.length);
    expect({ lost, duplicated, unanswered, namingAnother, stale, later, replyAfterNext }).toEqual({
      lost: 0,
      duplicated: 0,
      unanswered: 0,
      namingAnother: 0,
      stale: 0,
      later: 0,
      replyAfterNext: 0,
    });
    expect(answeredOnce).toBe(sent.length);
    expect(followed.heard).toBeGreaterThan(0);
    expect(retried).toMatchObject({
      status: 200,
      duplicate: true,
      reply: expect.stringMatching(/^ack m-k-0 /),
    });
    expect(killedPromptComplete).toBe(true);
    expect(retryMs).toBeLessThan(RETRY_BOUND_MS);
  },
  TEST_TIMEOUT_MS,
);
