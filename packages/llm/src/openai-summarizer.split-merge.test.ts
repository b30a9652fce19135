/**
 * OpenAiSummarizer, inputs larger than a window: splitting on message boundaries (tool calls kept
 * with their results), merging in rounds, splitting finer on context_length_exceeded, and merging
 * earlier summaries alone.
 */
import type { StoredMessage } from '@ebb/core';
import type { RecordedRequest } from '@ebb/testing/openai';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  closeServer,
  forgetDelays,
  input,
  loadSharedTokenizer,
  message,
  RETRY,
  schemaName,
  seqsIn,
  server,
  summarizer,
  tokenizer,
  userText,
} from '../test/openai-summarizer-harness.js';

beforeAll(loadSharedTokenizer);
beforeEach(forgetDelays);
afterEach(closeServer);

/** Answers summary calls with a summary naming the seqs it saw and one memory; merge calls with `merged`. */
function partsAndMerge(request: RecordedRequest) {
  if (schemaName(request) === 'merged_summary')
    return { json: { summary: `merged from request ${request.index}` } };
  const seqs = seqsIn(request);
  const first = seqs[0] ?? 0;
  const last = seqs.at(-1) ?? 0;
  return {
    json: {
      summary: `Part #${first}–#${last}: people talked.`,
      memories: [
        {
          type: 'fact',
          text: `Messages ${first} to ${last} happened.`,
          importance: 0.5,
          speaker: null,
          fromSeq: first,
          toSeq: last,
        },
      ],
    },
  };
}

describe('OpenAiSummarizer, inputs larger than a window', () => {
  it('splits on message boundaries into parts that fit, then merges them', async () => {
    const window = 6_000;
    // The fake enforces the same window with the same tokenizer: an oversized request would fail.
    const s = await summarizer(
      { contextWindow: window },
      { contextWindow: window, countTokens: (t: string) => tokenizer.count(t) },
    );
    server.reply(partsAndMerge);
    const messages: StoredMessage[] = [];
    for (let seq = 1; seq <= 240; seq++) {
      if (seq === 116) {
        messages.push({
          seq,
          role: 'assistant',
          author: 'ebb',
          text: 'Looking that up.',
          tokens: 10,
          toolCalls: [{ id: 'call_1', name: 'search', arguments: '{"q":"OPS-4411"}' }],
        });
      } else if (seq > 116 && seq <= 120) {
        messages.push({
          seq,
          role: 'tool',
          author: 'search',
          text: `Result ${seq}: OPS-4411 is open. `.repeat(8),
          tokens: 80,
          toolCallId: 'call_1',
        });
      } else {
        messages.push(
          message(
            seq,
            `user${seq % 7}`,
            `Message ${seq}: the deploy of service-${seq} needs review by Friday, see PR #${seq * 3}.`,
          ),
        );
      }
    }
    const earlier = ['## Decisions\n- Postgres stays the source of truth.'];

    const out = await s.summarize(input({ messages, toSeq: 240, maxTokens: 500, earlierSummaries: earlier }));

    expect(out.fallback).toBe(false);
    const summaries = server.requests.filter((r) => schemaName(r) === 'channel_summary');
    const merges = server.requests.filter((r) => schemaName(r) === 'merged_summary');
    expect(summaries.length).toBeGreaterThan(1);
    expect(merges).toHaveLength(1);
    // Every message is shown exactly once, in order, across the parts.
    expect(summaries.flatMap(seqsIn)).toEqual(messages.map((m) => m.seq));
    // The tool call and its results travel in one part.
    expect(summaries.filter((r) => seqsIn(r).some((seq) => seq >= 116 && seq <= 120)).map(seqsIn)).toEqual([
      expect.arrayContaining([116, 117, 118, 119, 120]),
    ]);
    // The earlier summary is folded in by the merge, with every partial summary.
    const merge = userText(merges[0]);
    expect(merge).toContain('Postgres stays the source of truth.');
    for (const r of summaries) {
      const seqs = seqsIn(r);
      expect(merge).toContain(`Part #${seqs[0]}–#${seqs.at(-1)}`);
      expect(userText(r)).not.toContain('Postgres stays');
    }
    expect(out.text).toBe(`merged from request ${merges[0]?.index}`);
    expect(out.memories).toHaveLength(summaries.length);
    expect(out.memories.map((m) => [m.fromSeq, m.toSeq])).toEqual(
      summaries.map((r) => [seqsIn(r)[0], seqsIn(r).at(-1)]),
    );
    expect(out.calls.map((c) => c.purpose)).toEqual([...summaries.map(() => 'summary'), 'merge']);
    expect(out.calls.every((c) => c.error === undefined)).toBe(true);
  });

  it('merges in rounds when the partial summaries together overflow the window', async () => {
    const window = 6_000;
    const s = await summarizer(
      { contextWindow: window },
      { contextWindow: window, countTokens: (t: string) => tokenizer.count(t) },
    );
    // Partial summaries far over the bound they were told, so one merge cannot hold them all.
    const wordy = 'The team discussed the rollout at length. '.repeat(150);
    server.reply((request) =>
      schemaName(request) === 'merged_summary'
        ? { json: { summary: `merged from request ${request.index}` } }
        : { json: { summary: `Part #${seqsIn(request)[0]}. ${wordy}`, memories: [] } },
    );
    const messages = Array.from({ length: 600 }, (_, i) =>
      message(
        i + 1,
        'ana',
        `Message ${i + 1}: the deploy of service-${i} needs review by Friday, see PR #${i}.`,
      ),
    );

    const out = await s.summarize(input({ messages, toSeq: 600, maxTokens: 600 }));

    expect(out.fallback).toBe(false);
    expect(out.calls.every((c) => c.error === undefined)).toBe(true);
    const merges = server.requests.filter((r) => schemaName(r) === 'merged_summary');
    expect(merges.length).toBeGreaterThan(1);
    expect(out.calls.at(-1)?.purpose).toBe('merge');
    expect(out.text).toBe(`merged from request ${merges.at(-1)?.index}`);
    // Every partial summary reached some merge.
    const parts = server.requests.filter((r) => schemaName(r) === 'channel_summary');
    for (const part of parts) {
      expect(merges.some((m) => userText(m).includes(`Part #${seqsIn(part)[0]}.`))).toBe(true);
    }
  });

  it('splits finer when the provider reports context_length_exceeded', async () => {
    const s = await summarizer();
    server.fail({ kind: 'context_length_exceeded', maxContextTokens: 8_192 }, { times: 1 });
    server.reply(partsAndMerge);
    const messages = Array.from({ length: 40 }, (_, i) =>
      message(i + 1, 'ana', `Line ${i + 1} about the rollout plan.`),
    );

    const out = await s.summarize(input({ messages, toSeq: 40 }));

    expect(out.fallback).toBe(false);
    expect(out.calls.map((c) => [c.purpose, c.error])).toEqual([
      ['summary', 'llm_context_overflow'],
      ['summary', undefined],
      ['summary', undefined],
      ['merge', undefined],
    ]);
    const [first, partA, partB] = server.requests;
    expect(seqsIn(first as RecordedRequest)).toHaveLength(40);
    expect([...seqsIn(partA as RecordedRequest), ...seqsIn(partB as RecordedRequest)]).toEqual(
      messages.map((m) => m.seq),
    );
    expect(seqsIn(partA as RecordedRequest).length).toBeGreaterThan(0);
    expect(seqsIn(partB as RecordedRequest).length).toBeGreaterThan(0);
    expect(out.memories).toHaveLength(2);
    expect(out.text).toMatch(/^merged/);
  });

  it('keeps halving while the provider keeps overflowing, then falls back', async () => {
    const s = await summarizer({ retry: { ...RETRY, attempts: 1 } });
    server.fail({ kind: 'context_length_exceeded' }, { when: () => true });
    const messages = Array.from({ length: 4 }, (_, i) => message(i + 1, 'ana', `Line ${i + 1}.`));

    const out = await s.summarize(input({ messages, toSeq: 4 }));

    expect(out.fallback).toBe(true);
    expect(out.calls.every((c) => c.error === 'llm_context_overflow')).toBe(true);
  });

  it('merges earlier summaries alone when there are no new messages', async () => {
    const s = await summarizer();
    server.reply(partsAndMerge);

    const out = await s.summarize(
      input({ messages: [], earlierSummaries: ['First summary.', 'Second summary.'] }),
    );

    expect(out.calls.map((c) => c.purpose)).toEqual(['merge']);
    expect(userText(server.requests[0])).toContain('Second summary.');
    expect(out.text).toMatch(/^merged/);
  });
});
