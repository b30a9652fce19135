/**
 * Today's models and yesterday's servers, through the real openai client against the fake OpenAI
 * server: `max_completion_tokens` by default, `max_tokens` learned from a server that knows only
 * that, optional parameters dropped when refused, the channel's prompt cache key, cached tokens read.
 */
import type { RequestSettings, SummarizeInput } from '@ebb/core';
import { FakeOpenAiServer, type ServerDialect } from '@ebb/testing/openai';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import OpenAI from 'openai';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveSummarizer } from './extractive-summarizer.js';
import { OpenAiChatModel } from './openai-chat-model.js';
import { OpenAiSummarizer } from './openai-summarizer.js';
import { promptCacheKey } from './request-dialect.js';
import { loadTokenizer } from './tokenizer.js';

const NO_RETRY = { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 };
const CHANNEL = 'slack:T1:C1';
let fake: FakeOpenAiServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function chatModel(
  dialect: ServerDialect,
  model: string,
  request?: RequestSettings,
  log = new RecordingLogger(),
  retry = NO_RETRY,
) {
  fake = await FakeOpenAiServer.start({ dialect });
  const client = new OpenAI({ baseURL: fake.url, apiKey: 'sk-test', maxRetries: 0 });
  return {
    server: fake,
    log,
    model: new OpenAiChatModel({
      client,
      model,
      maxOutputTokens: 300,
      retry,
      log,
      ...(request ? { request } : {}),
    }),
  };
}

const ask = (content = 'ana: hello') => [{ role: 'user' as const, content }];

describe('the chat model against today’s OpenAI models', () => {
  it('answers gpt-5.4-mini with max_completion_tokens, the channel’s cache key and no temperature', async () => {
    const { server, model } = await chatModel('openai', 'gpt-5.4-mini');
    const reply = await model.reply(ask(), { channelKey: CHANNEL });
    expect(reply.text).toBeTruthy();
    const [sent] = server.completionRequests;
    expect(sent?.fault).toBeUndefined();
    expect(sent?.body).toMatchObject({
      max_completion_tokens: 300,
      prompt_cache_key: promptCacheKey(CHANNEL),
    });
    expect(sent?.body).not.toHaveProperty('max_tokens');
    expect(sent?.body).not.toHaveProperty('temperature');
    // The key routes the channel's prompts together without telling the provider the channel's ids.
    expect(String(sent?.body.prompt_cache_key)).not.toContain('C1');
    expect(promptCacheKey(CHANNEL)).toBe(promptCacheKey(CHANNEL));
    expect(promptCacheKey('slack:T1:C2')).not.toBe(promptCacheKey(CHANNEL));
  });

  it('passes reasoning_effort and prompt_cache_retention through when the operator sets them', async () => {
    const { server, model } = await chatModel('openai', 'gpt-5.4-mini', {
      tokenLimitParam: 'auto',
      promptCacheKey: true,
      reasoningEffort: 'low',
      promptCacheRetention: '24h',
    });
    await model.reply(ask(), { channelKey: CHANNEL });
    expect(server.completionRequests[0]?.body).toMatchObject({
      reasoning_effort: 'low',
      prompt_cache_retention: '24h',
    });
  });

  it('drops a temperature the model refuses, once, and keeps it where it is taken', async () => {
    const settings = { tokenLimitParam: 'auto', promptCacheKey: true, temperature: 0.2 } as const;
    const { server, model, log } = await chatModel('openai', 'gpt-5.4-mini', settings);
    await model.reply(ask());
    await model.reply(ask());
    expect(server.completionRequests.map((r) => [r.fault, r.body.temperature])).toEqual([
      ['unsupported_parameter', 0.2],
      [undefined, undefined],
      [undefined, undefined],
    ]);
    expect(log.events('llm.parameter_adapted')).toMatchObject([
      { level: 'warn', fields: { refused: 'temperature', model: 'gpt-5.4-mini' } },
    ]);

    const older = await chatModel('openai', 'gpt-4o-mini', settings);
    await older.model.reply(ask());
    expect(older.server.completionRequests.map((r) => r.body.temperature)).toEqual([0.2]);
  });

  it('fails clearly, without guessing, when the operator pins the name the model refuses', async () => {
    const { server, model } = await chatModel('openai', 'gpt-5.4-mini', {
      tokenLimitParam: 'max_tokens',
      promptCacheKey: true,
    });
    await expect(model.reply(ask())).rejects.toMatchObject({
      code: 'llm_unsupported_parameter',
      param: 'max_tokens',
    });
    expect(server.completionRequests).toHaveLength(1);
  });

  it('reads the cached tokens the provider reports', async () => {
    const { model } = await chatModel('openai', 'gpt-5.4-mini');
    const long = Array.from({ length: 120 }, (_, i) => `ana: the build ${i} is green and deployed.`).join(
      '\n',
    );
    const first = await model.reply(ask(long), { channelKey: CHANNEL });
    const second = await model.reply([...ask(long), { role: 'user', content: 'bo: and now?' }], {
      channelKey: CHANNEL,
    });
    expect(first.cachedPromptTokens).toBe(0);
    expect(second.cachedPromptTokens).toBeGreaterThanOrEqual(1024);
    expect(second.cachedPromptTokens).toBeLessThanOrEqual(second.promptTokens ?? 0);
  });

  it('says which tries a retry hid, on a reply and on a failure', async () => {
    const retry = { attempts: 3, initialDelayMs: 1, maxDelayMs: 1, sleep: async () => {} };
    const { server, model } = await chatModel('openai', 'gpt-5.4-mini', undefined, undefined, retry);
    server.fail({ kind: 'rate_limit', retryAfterMs: 0 }, { times: 2 });
    const reply = await model.reply(ask());
    expect(reply.failedTries).toEqual(['llm_rate_limited', 'llm_rate_limited']);

    server.fail({ kind: 'server_error' }, { times: 3 });
    await expect(model.reply(ask())).rejects.toMatchObject({
      code: 'llm_server',
      failedTries: ['llm_server', 'llm_server', 'llm_server'],
    });
  });
});

describe('the chat model against a server that knows only max_tokens', () => {
  it('learns max_tokens and to send no cache key from the refusals, once, and answers', async () => {
    const { server, model, log } = await chatModel('legacy', 'gpt-5.4-mini');
    const first = await model.reply(ask(), { channelKey: CHANNEL });
    const second = await model.reply(ask(), { channelKey: CHANNEL });
    expect(first.text).toBeTruthy();
    expect(second.text).toBeTruthy();
    expect(server.completionRequests.map((r) => r.fault)).toEqual([
      'unsupported_parameter',
      'unsupported_parameter',
      undefined,
      undefined,
    ]);
    expect(server.completionRequests[3]?.body).toMatchObject({ max_tokens: 300 });
    expect(server.completionRequests[3]?.body).not.toHaveProperty('prompt_cache_key');
    expect(log.events('llm.parameter_adapted').map((e) => e.fields.refused)).toEqual([
      'max_completion_tokens',
      'prompt_cache_key',
    ]);
  });
});

describe('the summarizer against today’s models and yesterday’s servers', () => {
  let tokenizer: Awaited<ReturnType<typeof loadTokenizer>>;
  beforeAll(async () => {
    tokenizer = await loadTokenizer('o200k_base');
  });

  const input: SummarizeInput = {
    channelKey: CHANNEL,
    fromSeq: 1,
    toSeq: 2,
    earlierSummaries: [],
    messages: [
      { seq: 1, role: 'user', author: 'ana', text: 'We ship 2.4 on Friday.', tokens: 8 },
      { seq: 2, role: 'user', author: 'bo', text: 'Then I freeze main on Thursday.', tokens: 9 },
    ],
    maxTokens: 400,
  };

  async function summarizer(dialect: ServerDialect) {
    fake = await FakeOpenAiServer.start({ dialect });
    return {
      server: fake,
      summarizer: new OpenAiSummarizer({
        client: new OpenAI({ baseURL: fake.url, apiKey: 'sk-test', maxRetries: 0 }),
        model: 'gpt-5.4-mini',
        tokenizer,
        contextWindow: 128_000,
        timeoutMs: 5_000,
        retry: NO_RETRY,
        fallback: new ExtractiveSummarizer({ tokenizer }),
      }),
    };
  }

  for (const dialect of ['openai', 'legacy'] as const) {
    it(`writes the summary with the model (${dialect} server), not the fallback`, async () => {
      const { server, summarizer: s } = await summarizer(dialect);
      server.reply({ json: { summary: 'Release 2.4 ships Friday; main freezes Thursday.', memories: [] } });
      const out = await s.summarize(input);
      expect(out).toMatchObject({
        fallback: false,
        text: 'Release 2.4 ships Friday; main freezes Thursday.',
      });
      const answered = server.completionRequests.filter((r) => r.fault === undefined);
      expect(answered).toHaveLength(1);
      expect(answered[0]?.body).toHaveProperty(dialect === 'openai' ? 'max_completion_tokens' : 'max_tokens');
    });
  }

  it('asks again with a larger budget when a reasoning model thought through the whole one', async () => {
    const { server, summarizer: s } = await summarizer('openai');
    server.reply({ json: { summary: 'Ships Friday.', memories: [] }, reasoningTokens: 2_000 });
    const out = await s.summarize(input);
    expect(out).toMatchObject({ fallback: false, text: 'Ships Friday.' });
    const budgets = server.completionRequests.map((r) => r.body.max_completion_tokens ?? 0);
    expect(budgets).toHaveLength(2);
    expect(budgets[0]).toBeLessThan(2_000);
    expect(budgets[1]).toBeGreaterThan(2_000);
  });

  it('falls back, naming why, when even the larger budget is all thinking', async () => {
    const { server, summarizer: s } = await summarizer('openai');
    server.reply({ json: { summary: 'never', memories: [] }, reasoningTokens: 1_000_000 });
    const out = await s.summarize(input);
    expect(out.fallback).toBe(true);
    expect(out.calls.map((c) => c.error)).toEqual(['llm_output_exhausted', 'llm_output_exhausted']);
  });
});
