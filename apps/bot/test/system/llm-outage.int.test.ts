/**
 * The model provider failing under a running bot (web API, real Postgres and Redis, a BullMQ worker
 * in the process, the fake OpenAI server with faults): a 429 storm, then the provider down (503).
 * Every message is archived whatever the model does; background passes wait the fault out instead
 * of landing on the extractive fallback; no pass is left stuck; the failed tries show in the metrics.
 * Each test prints its row of RELIABILITY.md.
 */
import { loadEnv, resolveChannel } from '@ebb/config';
import { type CompactionRun, measureMessage, systemPromptTokens, UNCALIBRATED, usageOf } from '@ebb/core';
import { PgChannelStore, PgRunStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { loadTokenizer } from '@ebb/llm';
import { createLogger } from '@ebb/logger';
import { dropPrefix, randomPrefix } from '@ebb/queue/test-support';
import type { FakeFault, FakeOpenAiServer } from '@ebb/testing/openai';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';
import { smallWindowConfig, startAckingModel } from '../small-window.js';

/**
 * The web channel answers every message and is offered no tools: the quiet-channel case fills the
 * archive to just under the background threshold counting the system prompt only (the bot reserves
 * the memories a turn recalled, and this channel has none), and the history tools' definitions
 * (about 10% of this 4,000-token window) would push it past.
 */
const NO_TOOLS = ['[web.bot]', 'respond_to = "all"', '[web.tools]', 'allow = []'];

const CHANNEL = 'web:o';
const SENT = 80;
/** The fault is on while messages FAULT_FROM..FAULT_TO-1 are posted, then off for the rest. */
const FAULT_FROM = 10;
const FAULT_TO = 60;

let fake: FakeOpenAiServer;
/** Whether the fake provider answers with the test's fault. */
let faulty = false;
let fresh: FreshSchemaDb;
let ebb: RunningEbb | undefined;
let prefix: string;

beforeEach(async () => {
  fake = await startAckingModel();
  fresh = await freshSchemaDb();
  prefix = randomPrefix();
  ebb = await startEbb({
    config: () => smallWindowConfig(fake.url, NO_TOOLS),
    env: loadEnv({ OPENAI_API_KEY: 'k', EBB_REDIS_PREFIX: prefix }),
    logger: createLogger({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    withWorker: true,
    webPort: 0,
    database: fresh.database,
    processMetrics: false,
    llmRetry: { attempts: 2, initialDelayMs: 5, maxDelayMs: 10 },
  });
});

afterEach(async () => {
  await ebb?.close();
  ebb = undefined;
  await dropPrefix(prefix);
  await fresh.close();
  await fake.close();
}, 30_000);

interface Row {
  readonly sent: number;
  readonly acknowledged: number;
  readonly archived: number;
  readonly duplicated: number;
  readonly failedTurns: number;
  readonly runs: readonly CompactionRun[];
}

/** Posts SENT messages, with `fault` on from FAULT_FROM to FAULT_TO, then waits for every pass to end. */
async function postThrough(fault: FakeFault): Promise<Row> {
  const url = ebb?.web.url ?? '';
  faulty = false;
  fake.fail(fault, { when: () => faulty });
  let acknowledged = 0;
  let failedTurns = 0;
  for (let i = 0; i < SENT; i++) {
    faulty = i >= FAULT_FROM && i < FAULT_TO;
    const res = await fetch(`${url}/api/channels/o/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        author: 'ana',
        text: `status ${i}: ${'deploy step ok, '.repeat(25)}`,
        id: `m-${i}`,
      }),
    });
    const body = (await res.json()) as { code?: string };
    if (res.status === 200) acknowledged++;
    if (body.code === 'turn_failed') failedTurns++;
  }
  faulty = false;

  const runs = new PgRunStore({ db: fresh.db });
  await allPassesEnded(CHANNEL);

  const channels = new PgChannelStore({ db: fresh.db });
  const archive = await channels.readArchive(CHANNEL, 1, (await channels.loadPrefix(CHANNEL)).headSeq);
  const users = archive.filter((m) => m.role === 'user').map((m) => m.text);
  return {
    sent: SENT,
    acknowledged,
    archived: new Set(users).size,
    duplicated: users.length - new Set(users).size,
    failedTurns,
    runs: await runs.recent(CHANNEL, 1_000),
  };
}

/** Passes still waiting (a retry's backoff, a Retry-After) end once the provider is back: none is left stuck. */
async function allPassesEnded(channelKey: string): Promise<void> {
  const runs = new PgRunStore({ db: fresh.db });
  const unfinished = async () =>
    (await runs.unfinished({ createdBefore: Date.now() + 60_000, limit: 1_000 })).filter(
      (r) => r.channelKey === channelKey,
    );
  await vi.waitFor(async () => expect(await unfinished()).toEqual([]), { timeout: 60_000, interval: 250 });
}

/**
 * A quiet channel whose one message crosses the background threshold while the provider fails: its
 * archive is filled to just under 0.80 straight through the store (no turns, so the bot sees no
 * pace), then one message is posted. Returns the background run once it has been tried `tries`
 * times; the fault is then lifted, and the run it became when its pass ended is returned.
 */
async function quietChannelPass(tries: number): Promise<CompactionRun> {
  const key = 'web:quiet';
  const settings = resolveChannel(smallWindowConfig(fake.url, NO_TOOLS), key);
  const tokenizer = await loadTokenizer(settings.llm.encoding);
  const compactor = {
    contextWindow: settings.llm.contextWindow,
    maxOutputTokens: settings.llm.maxOutputTokens,
    reservedTokens: systemPromptTokens(tokenizer, settings.bot.systemPrompt),
  };
  const channels = new PgChannelStore({ db: fresh.db });
  const usage = async () =>
    usageOf({
      ...compactor,
      contextTokens: (await channels.loadContext(key)).tokens,
      calibration: UNCALIBRATED,
    });
  for (let i = 0; (await usage()) < 0.785; i++) {
    const { entry, archivedTokens } = measureMessage(
      { seq: 0, role: 'user', author: 'bo', text: `note ${i}: the build is green` },
      tokenizer,
      settings.compaction.messageMaxTokens,
    );
    await channels.append(key, { ...entry, tokens: archivedTokens, contextTokens: entry.tokens });
  }
  faulty = true;
  const res = await fetch(`${ebb?.web.url}/api/channels/quiet/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: 'ana', text: `status: ${'deploy step ok, '.repeat(25)}`, id: 'q-1' }),
  });
  expect(res.status).toBe(200);
  const runs = new PgRunStore({ db: fresh.db });
  const [run] = await runs.recent(key, 1);
  expect(run).toMatchObject({ tier: 'background' });
  const jobId = run?.jobId ?? '';
  await vi.waitFor(async () => expect((await runs.get(jobId))?.attempts).toBeGreaterThanOrEqual(tries), {
    timeout: 30_000,
    interval: 50,
  });
  expect(await runs.get(jobId)).toMatchObject({ status: 'running' });
  faulty = false;
  await allPassesEnded(key);
  return (await runs.get(jobId)) as CompactionRun;
}

function report(fault: string, row: Row, errors: number): void {
  const count = (f: (r: CompactionRun) => boolean) => row.runs.filter(f).length;
  console.info(
    `${fault}: sent ${row.sent}, acknowledged ${row.acknowledged}, archived ${row.archived}, ` +
      `duplicated ${row.duplicated}, turns answered with an error ${row.failedTurns}; passes ${row.runs.length}: ` +
      `completed by the LLM ${count((r) => r.status === 'completed' && !r.fallback)}, ` +
      `by the fallback ${count((r) => r.status === 'completed' && r.fallback === true)}, ` +
      `failed ${count((r) => r.status === 'failed')}, stale ${count((r) => r.status === 'stale')}, ` +
      `skipped ${count((r) => r.status === 'skipped')}; failed LLM tries counted ${errors}`,
  );
}

async function failedTries(code: string): Promise<number> {
  const text = await (await fetch(`${ebb?.web.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('ebb_llm_errors_total{') && l.includes(`code="${code}"`))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

function expectNothingLost(row: Row): void {
  expect(row.acknowledged).toBe(row.sent);
  expect(row.archived).toBe(row.sent);
  expect(row.duplicated).toBe(0);
  // The turns the fault met were archived, and answered with `turn_failed` rather than an apology.
  expect(row.failedTurns).toBeGreaterThan(0);
}

it('a 429 storm: every message archived, a background pass waits it out, none stuck', async () => {
  const row = await postThrough({ kind: 'rate_limit', retryAfterMs: 100 });
  const errors = await failedTries('llm_rate_limited');
  report('LLM 429 storm', row, errors);
  expectNothingLost(row);
  expect(errors).toBeGreaterThan(0);
  // Passes that could not wait (aggressive: the channel was filling fast) fell back, saying why.
  for (const run of row.runs.filter((r) => r.fallback === true)) {
    expect(run).toMatchObject({ tier: expect.not.stringMatching('background'), error: 'llm_rate_limited' });
  }

  // A quiet channel's background pass is put back after each Retry-After, spending no attempt, and
  // gets a real summary once the storm is over.
  const quiet = await quietChannelPass(3);
  console.info(
    `  quiet channel: background pass started ${quiet.attempts} times, ${quiet.status}, fallback ${quiet.fallback}`,
  );
  expect(quiet).toMatchObject({ tier: 'background', status: 'completed', fallback: false });
}, 120_000);

it('the provider down (503): every message archived, a background pass retried, none stuck', async () => {
  const row = await postThrough({ kind: 'server_error', status: 503 });
  const errors = await failedTries('llm_server');
  report('LLM down (503)', row, errors);
  expectNothingLost(row);
  expect(errors).toBeGreaterThan(0);
  // Every pass that fell back says why (the breaker counts it).
  for (const run of row.runs.filter((r) => r.fallback === true)) expect(run.error).toBe('llm_server');

  // A quiet channel's background pass spends its attempts with the job's backoff instead of falling
  // back at once, and gets a real summary when the provider is back before its last attempt.
  const quiet = await quietChannelPass(2);
  console.info(
    `  quiet channel: background pass started ${quiet.attempts} times, ${quiet.status}, fallback ${quiet.fallback}`,
  );
  expect(quiet).toMatchObject({ tier: 'background', status: 'completed', fallback: false });
}, 120_000);
