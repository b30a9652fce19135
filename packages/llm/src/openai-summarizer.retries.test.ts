/**
 * OpenAiSummarizer, retries: Retry-After, backoff, the errors that are not retried, giving up for
 * the queue when the channel can wait, and the extractive fallback when the pass must land.
 */
import { SummarizerGaveUpError, TakenBackError } from '@ebb/core';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  closeServer,
  delays,
  forgetDelays,
  GOOD_REPLY,
  input,
  loadSharedTokenizer,
  message,
  RETRY,
  server,
  summarizer,
  tokenizer,
} from '../test/openai-summarizer-harness.js';

beforeAll(loadSharedTokenizer);
beforeEach(forgetDelays);
afterEach(closeServer);

describe('OpenAiSummarizer, retries', () => {
  it('waits out a 429 storm as long as Retry-After asks, then succeeds', async () => {
    const s = await summarizer({ retry: { ...RETRY, attempts: 5 } });
    server.fail({ kind: 'rate_limit', retryAfterSeconds: 3 }, { times: 3 });
    server.enqueue({ json: GOOD_REPLY });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(false);
    expect(out.calls).toEqual([expect.objectContaining({ purpose: 'summary', attempts: 4 })]);
    // Jittered backoff here is at most 50/100/200 ms; Retry-After asked for 3 s each time.
    expect(delays).toEqual([3_000, 3_000, 3_000]);
    expect(server.requests).toHaveLength(4);
  });

  it('prefers retry-after-ms', async () => {
    const s = await summarizer();
    server.fail({ kind: 'rate_limit', retryAfterSeconds: 3, retryAfterMs: 1_250 }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });

    await s.summarize(input());

    expect(delays).toEqual([1_250]);
  });

  it('sends no retry once beforeCall says the text was taken back, and writes no fallback from it', async () => {
    const s = await summarizer();
    server.fail({ kind: 'server_error' }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });
    let checks = 0;
    const beforeCall = async () => {
      checks++;
      // The first try goes out; a take-back lands while it fails; the retry must not be sent.
      if (checks > 1) throw new TakenBackError('taken back meanwhile', [{ fromSeq: 1, toSeq: 1 }]);
    };

    await expect(s.summarize(input({ beforeCall }))).rejects.toBeInstanceOf(TakenBackError);

    expect(checks).toBe(2);
    expect(server.requests).toHaveLength(1);
  });

  it('retries a 500 and succeeds', async () => {
    const s = await summarizer();
    server.fail({ kind: 'server_error' }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(false);
    expect(out.text).toBe(GOOD_REPLY.summary);
    expect(out.calls[0]).toMatchObject({ attempts: 2 });
    expect(out.calls[0]?.error).toBeUndefined();
    expect(delays).toHaveLength(1);
    // Full jitter with random() = 0.5 over a first ceiling of 100 ms.
    expect(delays[0]).toBe(50);
  });

  it('does not retry a 401 nor hide it behind a fallback: it gives up with llm_auth and its calls', async () => {
    const s = await summarizer();
    server.fail({ kind: 'invalid_api_key' }, { when: () => true });

    const error = await s.summarize(input()).catch((e: unknown) => e);

    expect(server.requests).toHaveLength(1);
    expect(delays).toEqual([]);
    expect(error).toBeInstanceOf(SummarizerGaveUpError);
    expect(error).toMatchObject({ code: 'llm_auth', retryable: false });
    expect((error as SummarizerGaveUpError).calls).toEqual([
      expect.objectContaining({
        purpose: 'summary',
        attempts: 1,
        error: 'llm_auth',
        failedTries: ['llm_auth'],
      }),
    ]);
  });

  it('gives up on an exhausted quota the same way, even when the pass must land', async () => {
    const s = await summarizer();
    server.fail({ kind: 'insufficient_quota' }, { when: () => true });

    await expect(s.summarize(input({ canWait: false }))).rejects.toMatchObject({
      name: 'SummarizerGaveUpError',
      code: 'llm_quota_exceeded',
    });
  });

  it('gives up on a 429 storm when the channel can wait, with the Retry-After for the queue', async () => {
    const s = await summarizer({ retry: { ...RETRY, attempts: 2 } });
    server.fail({ kind: 'rate_limit', retryAfterSeconds: 7 }, { when: () => true });

    const error = await s.summarize(input({ canWait: true })).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SummarizerGaveUpError);
    expect(error).toMatchObject({ code: 'llm_rate_limited', retryable: true, retryAfterMs: 7_000 });
    expect((error as SummarizerGaveUpError).calls[0]).toMatchObject({
      error: 'llm_rate_limited',
      failedTries: ['llm_rate_limited', 'llm_rate_limited'],
    });
  });

  it('falls back on the same storm when the pass must land, and records every failed try', async () => {
    const s = await summarizer({ retry: { ...RETRY, attempts: 2 } });
    server.fail({ kind: 'rate_limit', retryAfterSeconds: 1 }, { when: () => true });

    const out = await s.summarize(input({ canWait: false }));

    expect(out).toMatchObject({ fallback: true, model: 'extractive' });
    expect(out.calls[0]).toMatchObject({
      error: 'llm_rate_limited',
      failedTries: ['llm_rate_limited', 'llm_rate_limited'],
    });
  });

  it('does not wait for a model that keeps answering garbage, even when the channel could', async () => {
    const s = await summarizer();
    server.fail({ kind: 'malformed_content' }, { when: () => true });

    const out = await s.summarize(input({ canWait: true }));

    expect(out).toMatchObject({ fallback: true, model: 'extractive' });
    expect(out.calls[0]).toMatchObject({ error: 'llm_malformed_output' });
  });

  it('records the 5xx a retry hid', async () => {
    const s = await summarizer();
    server.fail({ kind: 'server_error', status: 502 }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });

    const out = await s.summarize(input({ canWait: true }));

    expect(out.fallback).toBe(false);
    expect(out.calls[0]).toMatchObject({ attempts: 2, failedTries: ['llm_server'] });
    expect(out.calls[0]?.error).toBeUndefined();
  });

  it('falls back to an extractive summary within budget when the LLM keeps failing', async () => {
    const s = await summarizer();
    server.fail({ kind: 'server_error', status: 503 }, { when: () => true });
    const many = Array.from({ length: 60 }, (_, i) =>
      message(
        i + 1,
        i % 2 ? 'ana' : 'ben',
        `Should we deploy build ${1000 + i} to region eu-${i}? See https://ci.example.com/${i}`,
      ),
    );

    const out = await s.summarize(input({ messages: many, toSeq: 60, maxTokens: 150 }));

    expect(out.fallback).toBe(true);
    expect(out.model).toBe('extractive');
    expect(out.text.length).toBeGreaterThan(0);
    expect(tokenizer.count(out.text)).toBeLessThanOrEqual(150);
    expect(out.calls).toEqual([expect.objectContaining({ attempts: 4, error: 'llm_server' })]);
    expect(server.requests).toHaveLength(4);
    expect(delays).toHaveLength(3);
  });

  it('retries a response slower than the timeout', async () => {
    const s = await summarizer({ timeoutMs: 100 });
    server.fail({ kind: 'slow', delayMs: 30_000 }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(false);
    expect(out.text).toBe(GOOD_REPLY.summary);
    expect(out.calls[0]).toMatchObject({ attempts: 2 });
    expect(server.requests.map((r) => r.fault)).toEqual(['slow', undefined]);
  });

  it('falls back with llm_timeout when every try times out', async () => {
    const s = await summarizer({ timeoutMs: 50, retry: { ...RETRY, attempts: 2 } });
    server.fail({ kind: 'slow', delayMs: 30_000 }, { when: () => true });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(true);
    expect(out.calls).toEqual([expect.objectContaining({ attempts: 2, error: 'llm_timeout' })]);
  });

  it('retries malformed JSON content and succeeds', async () => {
    const s = await summarizer();
    server.fail({ kind: 'malformed_content' }, { times: 1 });
    server.enqueue({ json: GOOD_REPLY });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(false);
    expect(out.calls[0]).toMatchObject({ attempts: 2 });
  });

  it('retries malformed output a bounded number of times, then falls back', async () => {
    const s = await summarizer({ retry: { ...RETRY, attempts: 6 } });
    server.reply({ json: { summary: 'missing memories' } });
    server.fail({ kind: 'malformed_body' }, { times: 1 });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(true);
    expect(out.calls).toEqual([expect.objectContaining({ attempts: 3, error: 'llm_malformed_output' })]);
    expect(server.requests).toHaveLength(3);
  });

  it('treats a reply cut off at its output limit as malformed', async () => {
    const s = await summarizer();
    server.enqueue({ content: '{"summary": "cut', finishReason: 'length' }, { json: GOOD_REPLY });

    const out = await s.summarize(input());

    expect(out.fallback).toBe(false);
    expect(out.calls[0]).toMatchObject({ attempts: 2 });
  });
});
