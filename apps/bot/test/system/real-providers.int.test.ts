/**
 * Ebb on today's model against the two kinds of server a new user meets, end to end through the web
 * API, the real bot, Postgres and the in-process queue: an OpenAI-like server that refuses
 * `max_tokens` for the GPT-5 family (and applies its prompt caching rule), and an older server that
 * knows only `max_tokens` and refuses `prompt_cache_key`. With `model = "gpt-5.4-mini"` every message
 * is answered and the passes are written by the model, not the fallback; the cached tokens the
 * server reports reach the metrics.
 */
import { loadEnv, parseConfig } from '@ebb/config';
import { PgRunStore } from '@ebb/db';
import { type FreshSchemaDb, freshSchemaDb } from '@ebb/db/test-support';
import { createLogger } from '@ebb/logger';
import { randomPrefix } from '@ebb/queue/test-support';
import { FakeOpenAiServer, type ServerDialect } from '@ebb/testing/openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type RunningEbb, startEbb } from '../../src/start-ebb.js';

let fake: FakeOpenAiServer | undefined;
let fresh: FreshSchemaDb | undefined;
let ebb: RunningEbb | undefined;

afterEach(async () => {
  await ebb?.close();
  await fresh?.close();
  await fake?.close();
  ebb = undefined;
  fresh = undefined;
  fake = undefined;
});

const isPass = (body: { response_format?: unknown }) => body.response_format !== undefined;

async function start(dialect: ServerDialect) {
  fake = await FakeOpenAiServer.start({ dialect });
  fake.reply((request) =>
    isPass(request.body)
      ? { json: { summary: 'ana and bo went through the deploy checklist.', memories: [] } }
      : { content: 'Noted; the checklist is in the runbook.' },
  );
  fresh = await freshSchemaDb();
  const config = parseConfig(
    [
      '[llm]',
      'model = "gpt-5.4-mini"',
      'context_window = 8000',
      'max_output_tokens = 500',
      `base_url = "${fake.url}"`,
      '[memory]',
      'recall_max_tokens = 200',
      '[compaction]',
      'cooldown_seconds = 0',
      '[bot]',
      'respond_to = "all"',
    ].join('\n'),
    'real-providers.toml',
  );
  ebb = await startEbb({
    config: () => config,
    env: loadEnv({
      OPENAI_API_KEY: 'sk-test',
      EBB_REDIS_PREFIX: randomPrefix(),
      REDIS_URL: 'redis://127.0.0.1:1',
    }),
    logger: createLogger({ level: 'silent' }),
    withWorker: false,
    webPort: 0,
    database: fresh.database,
    llmRetry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
  });
  return { fake, fresh, ebb };
}

async function post(ebbUrl: string, channel: string, i: number): Promise<string | null> {
  const res = await fetch(`${ebbUrl}/api/channels/${channel}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      author: i % 2 ? 'ana' : 'bo',
      text: `step ${i} of the deploy checklist: drain node-${i}, check the error-rate and latency dashboards for the canary pool, confirm the feature flags for build ${4000 + i} match the release notes, then roll build ${4000 + i} to the canary and watch it for ten minutes before the next region`,
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { reply: string | null }).reply;
}

/** The value of one series of `/metrics`, 0 when absent. */
async function metric(ebbUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${ebbUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe.each(['openai', 'legacy'] as const)('model = "gpt-5.4-mini" on a server of kind %s', (dialect) => {
  it('answers every message and writes its passes with the model', async () => {
    const { fake, fresh, ebb } = await start(dialect);
    const runs = new PgRunStore({ db: fresh.db });
    const replies: (string | null)[] = [];
    for (
      let i = 1;
      i <= 60 && !(await runs.recent(`web:${dialect}`, 20)).some((r) => r.status === 'completed');
      i++
    ) {
      replies.push(await post(ebb.web.url, dialect, i));
    }

    expect(replies.length).toBeGreaterThan(5);
    expect(replies.every((r) => r === 'Noted; the checklist is in the runbook.')).toBe(true);
    await expect
      .poll(async () => (await runs.recent(`web:${dialect}`, 20)).find((r) => r.status === 'completed'))
      .toMatchObject({ fallback: false, model: 'gpt-5.4-mini' });

    const chats = fake.completionRequests.filter((r) => !isPass(r.body));
    const answered = chats.filter((r) => r.fault === undefined);
    expect(answered).toHaveLength(replies.length);
    if (dialect === 'openai') {
      // Nothing refused; every request names the limit today's models take, and the channel's cache key.
      expect(fake.completionRequests.every((r) => r.fault === undefined)).toBe(true);
      for (const r of answered) {
        expect(r.body.max_completion_tokens).toBe(500);
        expect(r.body).not.toHaveProperty('max_tokens');
        expect(typeof r.body.prompt_cache_key).toBe('string');
        // A day's cache retention, which this model takes, asked for by default.
        expect(r.body.prompt_cache_retention).toBe('24h');
      }
      expect(new Set(answered.map((r) => r.body.prompt_cache_key)).size).toBe(1);
      // The cached tokens the server reported reach /metrics, every one of them.
      const served = fake.cacheTotals.cachedTokens;
      expect(served).toBeGreaterThan(0);
      const counted =
        (await metric(ebb.web.url, 'ebb_llm_prompt_tokens_total{purpose="reply",cached="true"}')) +
        (await metric(ebb.web.url, 'ebb_llm_prompt_tokens_total{purpose="summary",cached="true"}')) +
        (await metric(ebb.web.url, 'ebb_llm_prompt_tokens_total{purpose="merge",cached="true"}'));
      expect(counted).toBe(served);
    } else {
      // Each parameter it does not know (the limit's name, the cache key, the retention) refused
      // once by the chat model and once by the summarizer, then never again.
      const refused = fake.completionRequests.filter((r) => r.fault === 'unsupported_parameter');
      expect(refused.length).toBeGreaterThanOrEqual(3);
      expect(refused.length).toBeLessThanOrEqual(6);
      for (const r of answered) {
        expect(r.body.max_tokens).toBe(500);
        expect(r.body).not.toHaveProperty('max_completion_tokens');
        expect(r.body).not.toHaveProperty('prompt_cache_key');
        expect(r.body).not.toHaveProperty('prompt_cache_retention');
      }
    }
  }, 90_000);
});
