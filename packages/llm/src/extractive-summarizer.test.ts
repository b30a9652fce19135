import { summarizeExtractive } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { ExtractiveSummarizer } from './extractive-summarizer.js';
import { loadTokenizer } from './tokenizer.js';

describe('ExtractiveSummarizer', () => {
  it("wraps core's extractive summary: no model call, no memories", async () => {
    const tokenizer = await loadTokenizer('o200k_base');
    const messages = Array.from({ length: 30 }, (_, i) => ({
      seq: i + 1,
      role: 'user' as const,
      author: i % 2 ? 'ana' : 'ben',
      text: `Should build ${i} go out on 2025-03-${10 + (i % 18)}? https://ci.example.com/${i}`,
      tokens: 20,
    }));
    const input = {
      channelKey: 'web:1',
      fromSeq: 1,
      toSeq: 30,
      earlierSummaries: ['Earlier: the team picked Postgres.'],
      messages,
      maxTokens: 120,
    };

    const out = await new ExtractiveSummarizer({ tokenizer }).summarize(input);

    expect(out).toEqual({
      text: summarizeExtractive({ ...input, tokenizer }),
      memories: [],
      fallback: false,
      model: 'extractive',
      calls: [],
    });
    expect(tokenizer.count(out.text)).toBeLessThanOrEqual(120);
  });
});
