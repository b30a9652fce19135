import { EbbError } from '@ebb/core';
import { type FakeFault, FakeOpenAiServer } from '@ebb/testing/openai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlmError, parseRetryAfter, toLlmError } from './errors.js';

let server: FakeOpenAiServer;
let client: OpenAI;

beforeAll(async () => {
  server = await FakeOpenAiServer.start();
  client = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
});

afterAll(async () => {
  await server.close();
});

/** What the real client throws for a fault, mapped. */
async function mapped(fault: FakeFault, timeout = 5_000): Promise<LlmError> {
  server.fail(fault);
  const thrown = await client.chat.completions
    .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { timeout })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  return toLlmError(thrown);
}

describe('toLlmError', () => {
  it.each([
    [{ kind: 'rate_limit', retryAfterSeconds: 7 }, 'llm_rate_limited', true, 429],
    [{ kind: 'insufficient_quota' }, 'llm_quota_exceeded', false, 429],
    [{ kind: 'context_length_exceeded' }, 'llm_context_overflow', false, 400],
    [{ kind: 'invalid_api_key' }, 'llm_auth', false, 401],
    [{ kind: 'server_error' }, 'llm_server', true, 500],
    [{ kind: 'server_error', status: 503 }, 'llm_server', true, 503],
    [{ kind: 'malformed_body' }, 'llm_malformed_output', true, undefined],
    [{ kind: 'connection_reset' }, 'llm_connection', true, undefined],
  ] satisfies [FakeFault, string, boolean, number | undefined][])(
    'maps %o to %s',
    async (fault, code, retryable, status) => {
      const error = await mapped(fault);
      expect(error).toBeInstanceOf(EbbError);
      expect(error).toMatchObject({ code, retryable, status });
      expect(error.cause).toBeDefined();
    },
  );

  it('keeps the wait a 429 asks for', async () => {
    expect((await mapped({ kind: 'rate_limit', retryAfterSeconds: 7 })).retryAfterMs).toBe(7_000);
    expect((await mapped({ kind: 'rate_limit', retryAfterMs: 250, retryAfterSeconds: 1 })).retryAfterMs).toBe(
      250,
    );
  });

  it('maps a client timeout to llm_timeout', async () => {
    const error = await mapped({ kind: 'slow', delayMs: 30_000 }, 30);
    expect(error).toMatchObject({ code: 'llm_timeout', retryable: true });
  });

  it('maps an abort to llm_aborted, which is not retried', async () => {
    const controller = new AbortController();
    controller.abort();
    const thrown = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(toLlmError(thrown)).toMatchObject({ code: 'llm_aborted', retryable: false });
  });

  it('returns an LlmError as it is and maps anything else to llm_unexpected', () => {
    const error = new LlmError('x', { code: 'llm_server', retryable: true });
    expect(toLlmError(error)).toBe(error);
    expect(toLlmError(new TypeError('bug'))).toMatchObject({ code: 'llm_unexpected', retryable: false });
    expect(toLlmError('a string')).toMatchObject({ code: 'llm_unexpected' });
  });
});

describe('parseRetryAfter', () => {
  const headers = (entries: Record<string, string>) => new Headers(entries);

  it('reads retry-after-ms first, then seconds, then an HTTP date', () => {
    expect(parseRetryAfter(headers({ 'retry-after-ms': '120', 'retry-after': '9' }))).toBe(120);
    expect(parseRetryAfter(headers({ 'retry-after': '1.5' }))).toBe(1_500);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:30 GMT' }), () => now)).toBe(
      30_000,
    );
  });

  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after-ms': '-5' }))).toBeUndefined();
  });
});
