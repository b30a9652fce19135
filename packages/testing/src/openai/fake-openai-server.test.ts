import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeOpenAiServer } from './fake-openai-server.js';

let server: FakeOpenAiServer;
let client: OpenAI;

beforeEach(async () => {
  server = await FakeOpenAiServer.start();
  client = new OpenAI({ baseURL: server.url, apiKey: 'sk-test-secret', maxRetries: 0 });
});

afterEach(async () => {
  await server.close();
});

const ask = (content = 'hello') =>
  client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

describe('FakeOpenAiServer replies', () => {
  it('answers a chat completion with usage and records the request without the key', async () => {
    server.enqueue({ content: 'Hi there.' });

    const completion = await ask('hello there, model');

    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('gpt-4o-mini');
    expect(completion.choices[0]?.message).toMatchObject({ role: 'assistant', content: 'Hi there.' });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.body.messages).toEqual([{ role: 'user', content: 'hello there, model' }]);
    expect(request?.headers.authorization).toBe('[redacted]');
    expect(JSON.stringify(server.requests)).not.toContain('sk-test-secret');
  });

  it('serves the queue first, then the handler, then a default reply', async () => {
    server.enqueue({ content: 'first' }, (req) => ({ content: `second to ${req.index}` }));
    server.reply((req) => ({ content: `handled ${req.body.messages.length}` }));

    const texts = [];
    for (let i = 0; i < 4; i++) texts.push((await ask()).choices[0]?.message.content);

    expect(texts).toEqual(['first', 'second to 1', 'handled 1', 'handled 1']);
  });

  it('returns the scripted JSON as structured output and records the json_schema', async () => {
    server.enqueue({ json: { summary: 'short', memories: [] } });

    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'summarize' }],
      max_tokens: 100,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'summary', strict: true, schema: { type: 'object' } },
      },
    });

    expect(JSON.parse(completion.choices[0]?.message.content ?? '')).toEqual({
      summary: 'short',
      memories: [],
    });
    expect(server.requests[0]?.body).toMatchObject({
      max_tokens: 100,
      response_format: { type: 'json_schema', json_schema: { name: 'summary', strict: true } },
    });
  });

  it('returns tool calls', async () => {
    server.enqueue({ toolCalls: [{ name: 'lookup', arguments: { id: 42 } }] });

    const completion = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'find 42' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });

    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    expect(call?.type === 'function' ? JSON.parse(call.function.arguments) : undefined).toEqual({ id: 42 });
    expect(server.requests[0]?.body.tools).toHaveLength(1);
  });

  it('sends a tool call without an id when its id is null, as some compatible servers do', async () => {
    server.enqueue({
      toolCalls: [
        { id: null, name: 'lookup', arguments: {} },
        { name: 'lookup', arguments: {} },
      ],
    });
    const calls = (await ask('find it')).choices[0]?.message.tool_calls ?? [];
    expect(calls.map((call) => 'id' in call)).toEqual([false, true]);
  });

  it('streams content in chunks with usage in the last chunk', async () => {
    const text = 'A streamed answer that is longer than one chunk of sixteen characters.';
    server.enqueue({ content: text });

    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      content += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }

    expect(content).toBe(text);
    expect(chunks).toBeGreaterThan(3);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('streams tool calls that the client accumulates', async () => {
    server.enqueue({
      toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { query: 'the deploy runbook' } }],
    });

    const runner = client.chat.completions.stream({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'find it' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const final = await runner.finalChatCompletion();

    const call = final.choices[0]?.message.tool_calls?.[0];
    expect(call).toMatchObject({ id: 'call_1', type: 'function', function: { name: 'lookup' } });
    expect(call?.type === 'function' ? JSON.parse(call.function.arguments) : undefined).toEqual({
      query: 'the deploy runbook',
    });
  });

  it('answers unknown paths with the API 404 body', async () => {
    await expect(client.models.list()).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('FakeOpenAiServer faults', () => {
  it('rate limits the next N requests with Retry-After headers', async () => {
    server.fail({ kind: 'rate_limit', retryAfterSeconds: 2, retryAfterMs: 1500 }, { times: 2 });

    for (let i = 0; i < 2; i++) {
      const error = await ask().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      const rateLimit = error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(rateLimit.status).toBe(429);
      expect(rateLimit.code).toBe('rate_limit_exceeded');
      expect(rateLimit.headers?.get('retry-after')).toBe('2');
      expect(rateLimit.headers?.get('retry-after-ms')).toBe('1500');
    }
    await expect(ask()).resolves.toMatchObject({ object: 'chat.completion' });
    expect(server.requests.map((r) => r.fault)).toEqual(['rate_limit', 'rate_limit', undefined]);
  });

  it('speaks a Retry-After the real client honours when it retries itself', async () => {
    const retrying = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 1 });
    server.fail({ kind: 'rate_limit', retryAfterMs: 5 });
    server.enqueue({ content: 'after the wait' });

    const completion = await retrying.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'x' }],
    });

    expect(completion.choices[0]?.message.content).toBe('after the wait');
    expect(server.requests).toHaveLength(2);
  });

  it('applies a fault only to requests matching its predicate', async () => {
    server.fail(
      { kind: 'server_error' },
      { when: (req) => JSON.stringify(req.body.messages).includes('boom') },
    );

    await expect(ask('boom')).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(ask('fine')).resolves.toMatchObject({ object: 'chat.completion' });
    await expect(ask('boom again')).rejects.toMatchObject({ status: 500 });
  });

  it('answers 503 when asked', async () => {
    server.fail({ kind: 'server_error', status: 503 });
    await expect(ask()).rejects.toMatchObject({ status: 503 });
  });

  it('sends the real context_length_exceeded body', async () => {
    server.fail({ kind: 'context_length_exceeded', maxContextTokens: 8192 });

    const error = await ask().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      code: 'context_length_exceeded',
      param: 'messages',
      type: 'invalid_request_error',
    });
    expect((error as Error).message).toContain("This model's maximum context length is 8192 tokens");
  });

  it('enforces a context window when configured', async () => {
    const small = await FakeOpenAiServer.start({ contextWindow: 50 });
    try {
      const c = new OpenAI({ baseURL: small.url, apiKey: 'k', maxRetries: 0 });
      const request = (content: string) =>
        c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content }], max_tokens: 10 });

      await expect(request('short')).resolves.toMatchObject({ object: 'chat.completion' });
      await expect(request('x'.repeat(400))).rejects.toMatchObject({ code: 'context_length_exceeded' });
      expect(small.requests.map((r) => r.fault)).toEqual([undefined, 'context_length_exceeded']);
    } finally {
      await small.close();
    }
  });

  it('rejects a wrong key with 401 invalid_api_key', async () => {
    server.fail({ kind: 'invalid_api_key' });
    await expect(ask()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const keyed = await FakeOpenAiServer.start({ apiKey: 'right' });
    try {
      const wrong = new OpenAI({ baseURL: keyed.url, apiKey: 'wrong', maxRetries: 0 });
      const right = new OpenAI({ baseURL: keyed.url, apiKey: 'right', maxRetries: 0 });
      const body = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }] };
      await expect(wrong.chat.completions.create(body)).rejects.toMatchObject({ code: 'invalid_api_key' });
      await expect(right.chat.completions.create(body)).resolves.toMatchObject({ object: 'chat.completion' });
    } finally {
      await keyed.close();
    }
  });

  it('answers slowly past the client timeout without spending the scripted reply', async () => {
    server.fail({ kind: 'slow', delayMs: 5_000 });
    server.enqueue({ content: 'kept for the next request' });

    await expect(
      client.chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        { timeout: 50, maxRetries: 0 },
      ),
    ).rejects.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    const next = await ask();

    expect(next.choices[0]?.message.content).toBe('kept for the next request');
    expect(server.requests.map((r) => r.fault)).toEqual(['slow', undefined]);
  });

  it('answers normally after a short delay', async () => {
    server.fail({ kind: 'slow', delayMs: 1 });
    server.enqueue({ content: 'late but here' });
    expect((await ask()).choices[0]?.message.content).toBe('late but here');
  });

  it('sends content that is not the requested JSON', async () => {
    server.fail({ kind: 'malformed_content' });

    const completion = await ask();

    expect(() => JSON.parse(completion.choices[0]?.message.content ?? '')).toThrow();
  });

  it('sends a body that is not JSON at all', async () => {
    server.fail({ kind: 'malformed_body' });
    await expect(ask()).rejects.toThrow();

    server.fail({ kind: 'malformed_body', body: 'upstream error', contentType: 'text/plain' });
    const text: unknown = await ask();
    expect(text).toBe('upstream error');
  });

  it('resets the connection', async () => {
    server.fail({ kind: 'connection_reset' });
    await expect(ask()).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('answers 429 insufficient_quota', async () => {
    server.fail({ kind: 'insufficient_quota' });
    await expect(ask()).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
  });

  it('forgets everything on reset', async () => {
    server.enqueue({ content: 'scripted' });
    server.fail({ kind: 'server_error' }, { times: 5 });
    server.reset();

    const completion = await ask();

    expect(completion.choices[0]?.message.content).not.toBe('scripted');
    expect(server.requests).toHaveLength(1);
  });
});

describe('FakeOpenAiServer as real providers behave', () => {
  const long = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => `${tag} line ${i}: the deploy of service ${i} went fine today.`).join(
      '\n',
    );

  it('refuses max_tokens for the GPT-5 family and the o-series, with OpenAI’s own body', async () => {
    for (const model of ['gpt-5.4-mini', 'o3-mini']) {
      const error = await client.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'max_tokens' });
      expect(String((error as Error).message)).toContain("Use 'max_completion_tokens' instead");
    }
    const ok = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 50,
    });
    expect(ok.choices[0]?.message.content).toBeTruthy();
    expect(server.requests.map((r) => r.fault)).toEqual([
      'unsupported_parameter',
      'unsupported_parameter',
      undefined,
    ]);
  });

  it('refuses a temperature other than 1 for a reasoning model, and reasoning_effort for an older one', async () => {
    const hot = await client.chat.completions
      .create({ model: 'gpt-5.4-mini', messages: [{ role: 'user', content: 'hi' }], temperature: 0.2 })
      .catch((e: unknown) => e);
    expect(hot).toMatchObject({ status: 400, code: 'unsupported_value', param: 'temperature' });
    const effort = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'low' })
      .catch((e: unknown) => e);
    expect(effort).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'reasoning_effort' });
  });

  it('as a legacy server, knows max_tokens only and refuses what it has never heard of', async () => {
    const legacy = await FakeOpenAiServer.start({ dialect: 'legacy' });
    const old = new OpenAI({ baseURL: legacy.url, apiKey: 'sk-test', maxRetries: 0 });
    try {
      for (const extra of [{ max_completion_tokens: 5 }, { prompt_cache_key: 'k' }]) {
        const error = await old.chat.completions
          .create({ model: 'gpt-5.4-mini', messages: [{ role: 'user', content: 'hi' }], ...extra })
          .catch((e: unknown) => e);
        expect(error).toMatchObject({ status: 400, code: null, param: null });
        expect(String((error as Error).message)).toContain(
          `Unrecognized request argument supplied: ${Object.keys(extra)[0]}`,
        );
      }
      const ok = await old.chat.completions.create({
        model: 'gpt-5.4-mini',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 5,
      });
      expect(ok.choices[0]?.finish_reason).toBe('stop');
    } finally {
      await legacy.close();
    }
  });

  it('serves a repeated prefix from its cache in 128-token steps from 1,024 tokens, and reports it', async () => {
    const system = { role: 'system' as const, content: long(90, 'system') };
    const first = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [system, { role: 'user', content: 'first question' }],
    });
    expect(first.usage?.prompt_tokens).toBeGreaterThan(1024);
    expect(first.usage?.prompt_tokens_details?.cached_tokens).toBe(0);

    const second = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [
        system,
        { role: 'user', content: 'first question' },
        { role: 'user', content: 'and a second' },
      ],
    });
    const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached % 128).toBe(0);
    expect(cached).toBeGreaterThanOrEqual(1024);
    // Everything up to the new message was seen before; at most one step plus the new message is not.
    expect((second.usage?.prompt_tokens ?? 0) - cached).toBeLessThan(128 + 20);

    // A change right after the system prompt leaves only the system prompt's steps cached.
    const changed = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [system, { role: 'user', content: 'Xfirst question' }],
    });
    const systemTokens = Math.ceil(`<|system|>${system.content}`.length / 4);
    const kept = changed.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    expect(kept % 128).toBe(0);
    expect(kept).toBeLessThanOrEqual(systemTokens + 1);
    expect(kept).toBeGreaterThan(systemTokens - 128);
    expect(server.cacheTotals.cachedTokens).toBe(
      cached + (changed.usage?.prompt_tokens_details?.cached_tokens ?? 0),
    );
    // Warm: the two replies the cache served a part of, and what it did not serve of them.
    expect(server.cacheTotals).toMatchObject({
      warmReplies: 2,
      warmUncachedTokens:
        (second.usage?.prompt_tokens ?? 0) - cached + (changed.usage?.prompt_tokens ?? 0) - kept,
    });
  });

  it('caches nothing under 1,024 tokens, and keeps prompt_cache_key routes apart', async () => {
    const short = await ask('short');
    await ask('short');
    expect(short.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(server.cacheTotals.cachedTokens).toBe(0);

    const messages = [{ role: 'user' as const, content: long(80, 'shared') }];
    await client.chat.completions.create({ model: 'gpt-5.4-mini', messages, prompt_cache_key: 'channel-a' });
    const otherKey = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages,
      prompt_cache_key: 'channel-b',
    });
    const sameKey = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages,
      prompt_cache_key: 'channel-a',
    });
    expect(otherKey.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(sameKey.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(1024);
  });

  it('reports no cache at all when it has none', async () => {
    const bare = await FakeOpenAiServer.start({ promptCache: false });
    const c = new OpenAI({ baseURL: bare.url, apiKey: 'sk-test', maxRetries: 0 });
    try {
      const done = await c.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(done.usage?.prompt_tokens_details).toBeUndefined();
    } finally {
      await bare.close();
    }
  });

  it('answers after its latency, so a client with a shorter timeout gives up', async () => {
    const slow = await FakeOpenAiServer.start({ latencyMs: 5_000 });
    const c = new OpenAI({ baseURL: slow.url, apiKey: 'sk-test', maxRetries: 0, timeout: 50 });
    try {
      const error = await c.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
      expect(slow.requests).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });

  it('lets a reasoning model spend its whole budget thinking: no text, finish_reason length', async () => {
    server.enqueue(
      { content: 'never written', reasoningTokens: 500 },
      { content: 'written', reasoningTokens: 500 },
    );
    const cut = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [{ role: 'user', content: 'think' }],
      max_completion_tokens: 400,
    });
    expect(cut.choices[0]).toMatchObject({ finish_reason: 'length', message: { content: '' } });
    expect(cut.usage).toMatchObject({
      completion_tokens: 400,
      completion_tokens_details: { reasoning_tokens: 400 },
    });
    const roomy = await client.chat.completions.create({
      model: 'gpt-5.4-mini',
      messages: [{ role: 'user', content: 'think' }],
      max_completion_tokens: 2000,
    });
    expect(roomy.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'written' } });
    expect(roomy.usage?.completion_tokens_details?.reasoning_tokens).toBe(500);
  });
});
