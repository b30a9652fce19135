/**
 * A pass's log line says what wrote its summary and what that cost: `compaction.completed` (and a
 * `compaction.failed` whose summarizer made calls) carries the model, the calls' input, cached input
 * and output tokens, and their cost at `[prices]`, as config.toml promises. An offline pass says it
 * is one: model `extractive`, `fallback: false` (no model failed), no tokens, no cost.
 */
import { type EbbEnv, parseConfig } from '@ebb/config';
import { costUsd, toNewMessage } from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { passSettingsResolver } from './channel-pass-settings.js';
import { createCompactionProcessor } from './compaction-processor.js';
import { logCompactionEvent } from './run-worker.js';

const CHANNEL = 'web:costs';
const PRICE = { input_per_mtok: 0.75, cached_input_per_mtok: 0.075, output_per_mtok: 4.5 };
const tokenizer = await loadTokenizer('o200k_base');

let fake: FakeOpenAiServer;
beforeEach(async () => {
  fake = await FakeOpenAiServer.start();
});
afterEach(async () => {
  await fake.close();
});

/** A channel of 30 messages, a processor over it logging to `logger`, and a pass over 1..20. */
async function onePass(toml: string, env: Pick<EbbEnv, 'OPENAI_API_KEY'>, logger: RecordingLogger) {
  const channels = new InMemoryChannelStore();
  for (let i = 1; i <= 30; i++) {
    const message = {
      role: 'user' as const,
      author: i % 2 ? 'ana' : 'bo',
      // Long enough that a summary frees room: a pass that would grow the context is not spliced.
      text: `message ${i} about the release: ${'the rollout plan and its checklist '.repeat(20)}`,
    };
    await channels.append(CHANNEL, toNewMessage(message, tokenizer, 1_000));
  }
  const runs = new InMemoryRunStore();
  const processor = createCompactionProcessor({
    channels,
    memories: new InMemoryMemoryStore(),
    runs,
    takeBacks: channels.takeBacks,
    notifier: new InProcessContextNotifier(),
    settingsFor: passSettingsResolver({
      config: () => parseConfig(toml, 'costs.toml'),
      env,
      retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    }),
    onEvent: (e) => logCompactionEvent(logger, e),
  });
  const job = { jobId: 'pass-1', channelKey: CHANNEL, tier: 'background' as const, fromSeq: 1, toSeq: 20 };
  const result = await processor({ ...job, generation: 0, attempt: 1 }).catch((err: unknown) => err);
  return { result, run: await runs.get('pass-1') };
}

it('logs the model, its tokens and their cost at [prices] on compaction.completed', async () => {
  fake.reply(() => ({ json: { summary: 'Ana and Bo planned the release.', memories: [] } }));
  const toml = [
    '[llm]',
    `base_url = "${fake.url}"`,
    'model = "gpt-5.4-mini"',
    '[prices."gpt-5.4-mini"]',
    'input_per_mtok = 0.75',
    'cached_input_per_mtok = 0.075',
    'output_per_mtok = 4.50',
  ].join('\n');
  const logger = new RecordingLogger();
  const { result, run } = await onePass(toml, { OPENAI_API_KEY: 'test-key' }, logger);
  expect(result).toMatchObject({ kind: 'completed' });

  const [completed] = logger.events('compaction.completed');
  const fields = completed?.fields ?? {};
  expect(fields).toMatchObject({ channel: CHANNEL, model: 'gpt-5.4-mini', fallback: false });
  // The same tokens the run recorded, and the cost of exactly those.
  expect(fields.inputTokens).toBe(run?.inputTokens);
  expect(fields.outputTokens).toBe(run?.outputTokens);
  expect(fields.inputTokens).toBeGreaterThan(0);
  expect(fields.cachedInputTokens).toEqual(expect.any(Number));
  const spent = {
    input: fields.inputTokens as number,
    cached: fields.cachedInputTokens as number,
    output: fields.outputTokens as number,
  };
  expect(fields.costUsd).toBeCloseTo(costUsd(spent, PRICE), 12);
  expect(fields.costUsd).toBeGreaterThan(0);
});

it('logs a model without a price with costUsd null, and the calls of a pass that failed', async () => {
  fake.fail({ kind: 'invalid_api_key' }, { times: 5 });
  const toml = ['[llm]', `base_url = "${fake.url}"`, 'model = "my-own-model"'].join('\n');
  const logger = new RecordingLogger();
  const { result } = await onePass(toml, { OPENAI_API_KEY: 'wrong-key' }, logger);
  expect(result).toBeInstanceOf(Error);

  const [failed] = logger.events('compaction.failed');
  expect(failed?.fields).toMatchObject({
    channel: CHANNEL,
    error: 'llm_auth',
    model: 'my-own-model',
    inputTokens: 0,
    outputTokens: 0,
    costUsd: null,
  });
});

it('says what an offline pass is: model extractive, fallback false, no tokens, no cost', async () => {
  const logger = new RecordingLogger();
  const { result, run } = await onePass('', {}, logger);
  expect(result).toMatchObject({ kind: 'completed', fallback: false });
  expect(run).toMatchObject({ model: 'extractive', fallback: false });

  const [completed] = logger.events('compaction.completed');
  expect(completed?.fields).toMatchObject({
    model: 'extractive',
    fallback: false,
    inputTokens: 0,
    cachedInputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
  });
});
