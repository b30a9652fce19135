import { type ChatModel, EbbError, type LlmCall, SummarizerGaveUpError, type SummaryOutput } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { meteredChatModel, meteredSummarizer } from './metered-models.js';

describe('meteredChatModel', () => {
  const clock = () => {
    let t = 0;
    return () => (t += 250);
  };

  it('reports one reply call with the provider token counts', async () => {
    const calls: LlmCall[] = [];
    const model: ChatModel = {
      label: 'gpt-4o-mini',
      reply: async () => ({ text: 'hi', promptTokens: 1_200, completionTokens: 30 }),
    };
    const metered = meteredChatModel(model, (c) => calls.push(...c), clock());
    expect(metered.label).toBe('gpt-4o-mini');
    expect(await metered.reply([])).toEqual({ text: 'hi', promptTokens: 1_200, completionTokens: 30 });
    expect(calls).toEqual([
      {
        purpose: 'reply',
        model: 'gpt-4o-mini',
        attempts: 1,
        inputTokens: 1_200,
        outputTokens: 30,
        durationMs: 250,
      },
    ]);
  });

  it('reports a failed reply with its error code and rethrows', async () => {
    const calls: LlmCall[] = [];
    const failure = new EbbError('the provider refused the prompt', { code: 'context_overflow' });
    const metered = meteredChatModel(
      { label: 'm', reply: () => Promise.reject(failure) },
      (c) => calls.push(...c),
      clock(),
    );
    await expect(metered.reply([])).rejects.toBe(failure);
    expect(calls).toEqual([
      {
        purpose: 'reply',
        model: 'm',
        attempts: 1,
        inputTokens: 0,
        outputTokens: 0,
        durationMs: 250,
        error: 'context_overflow',
      },
    ]);
  });
});

describe('meteredChatModel and the tries a retry hid', () => {
  it('reports the cached tokens and every failed try of a reply, and of a reply that failed for good', async () => {
    const calls: LlmCall[] = [];
    let fail = false;
    const model: ChatModel = {
      label: 'gpt-5.4-mini',
      reply: async () => {
        if (fail) {
          throw Object.assign(
            new EbbError('still rate limited', { code: 'llm_rate_limited', retryable: true }),
            {
              failedTries: ['llm_rate_limited', 'llm_server', 'llm_rate_limited'],
            },
          );
        }
        return {
          text: 'hi',
          promptTokens: 3_000,
          cachedPromptTokens: 2_944,
          completionTokens: 20,
          failedTries: ['llm_rate_limited', 'llm_rate_limited'],
        };
      },
    };
    const metered = meteredChatModel(
      model,
      (c) => calls.push(...c),
      () => 0,
    );
    await metered.reply([]);
    fail = true;
    await expect(metered.reply([])).rejects.toMatchObject({ code: 'llm_rate_limited' });
    expect(calls).toEqual([
      expect.objectContaining({
        inputTokens: 3_000,
        cachedInputTokens: 2_944,
        failedTries: ['llm_rate_limited', 'llm_rate_limited'],
      }),
      expect.objectContaining({
        error: 'llm_rate_limited',
        failedTries: ['llm_rate_limited', 'llm_server', 'llm_rate_limited'],
      }),
    ]);
  });
});

describe('meteredSummarizer', () => {
  const input = {
    channelKey: 'web:x',
    fromSeq: 1,
    toSeq: 2,
    earlierSummaries: [],
    messages: [],
    maxTokens: 100,
  };

  it("reports the output's calls, failed ones included", async () => {
    const output: SummaryOutput = {
      text: 'summary',
      memories: [],
      fallback: true,
      model: 'extractive',
      calls: [
        {
          purpose: 'summary',
          model: 'm',
          inputTokens: 0,
          outputTokens: 0,
          durationMs: 9,
          attempts: 4,
          error: 'timeout',
        },
      ],
    };
    const seen: (readonly LlmCall[])[] = [];
    const metered = meteredSummarizer({ summarize: async () => output }, (c) => seen.push(c));
    expect(await metered.summarize(input)).toBe(output);
    expect(seen).toEqual([output.calls]);
  });

  it('reports the calls of a pass the summarizer gave up on, and rethrows', async () => {
    const call: LlmCall = {
      purpose: 'summary',
      model: 'm',
      inputTokens: 0,
      outputTokens: 0,
      durationMs: 3,
      attempts: 2,
      error: 'llm_rate_limited',
      failedTries: ['llm_rate_limited', 'llm_rate_limited'],
    };
    const gaveUp = new SummarizerGaveUpError(
      new EbbError('429', { code: 'llm_rate_limited', retryable: true }),
      [call],
    );
    const seen: (readonly LlmCall[])[] = [];
    const metered = meteredSummarizer(
      {
        summarize: async () => {
          throw gaveUp;
        },
      },
      (c) => seen.push(c),
    );
    await expect(metered.summarize(input)).rejects.toBe(gaveUp);
    expect(seen).toEqual([[call]]);
  });
});
