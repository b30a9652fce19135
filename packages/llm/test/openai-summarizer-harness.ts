/**
 * What the OpenAiSummarizer tests share: the real `openai` client against FakeOpenAiServer, a
 * recording sleep (so retry delays are asserted, never waited), a small release conversation, and
 * readers for the requests the fake recorded.
 *
 * A test file registers the hooks: `beforeAll(loadSharedTokenizer)`, `beforeEach(forgetDelays)` and
 * `afterEach(closeServer)`. `tokenizer`, `server` and `delays` are live bindings, set by those hooks
 * and by `summarizer()`.
 */
import type { StoredMessage, SummarizeInput, Tokenizer } from '@ebb/core';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import OpenAI from 'openai';
import { ExtractiveSummarizer } from '../src/extractive-summarizer.js';
import { OpenAiSummarizer } from '../src/openai-summarizer.js';
import type { OpenAiSummarizerOptions } from '../src/openai-summarizer-options.js';
import type { RetryOptions } from '../src/retry.js';
import { loadTokenizer } from '../src/tokenizer.js';

export let tokenizer: Tokenizer;
export let server: FakeOpenAiServer;
export let delays: number[];

export async function loadSharedTokenizer(): Promise<void> {
  tokenizer = await loadTokenizer('o200k_base');
}

export async function forgetDelays(): Promise<void> {
  delays = [];
}

export async function closeServer(): Promise<void> {
  await server?.close();
}

/** Sleeps no time and remembers how long it was asked to, so tests are fast and cannot flake. */
const recordingSleep = async (ms: number) => {
  delays.push(ms);
};

export const RETRY: RetryOptions = {
  attempts: 4,
  initialDelayMs: 100,
  maxDelayMs: 1_000,
  sleep: recordingSleep,
  random: () => 0.5,
};

export async function summarizer(overrides: Partial<OpenAiSummarizerOptions> = {}, serverOptions = {}) {
  server = await FakeOpenAiServer.start(serverOptions);
  const client = new OpenAI({ baseURL: server.url, apiKey: 'sk-test', maxRetries: 0 });
  return new OpenAiSummarizer({
    client,
    model: 'gpt-4o-mini',
    tokenizer,
    contextWindow: 128_000,
    timeoutMs: 5_000,
    retry: RETRY,
    fallback: new ExtractiveSummarizer({ tokenizer }),
    ...overrides,
  });
}

export function message(
  seq: number,
  author: string,
  text: string,
  extra: Partial<StoredMessage> = {},
): StoredMessage {
  return { seq, role: 'user', author, text, tokens: tokenizer.count(text) + 4, ...extra };
}

export const CONVERSATION: StoredMessage[] = [
  {
    seq: 1,
    role: 'user',
    author: 'ana',
    text: 'Can we ship v2.3.1 on Friday? The release notes are at https://example.com/r/231',
    tokens: 30,
  },
  {
    seq: 2,
    role: 'user',
    author: 'ben',
    text: 'Only if ticket OPS-4411 is fixed first; the migration still fails on staging.',
    tokens: 30,
  },
  {
    seq: 3,
    role: 'user',
    author: 'ana',
    text: 'Agreed: we ship Friday 14:00 UTC if OPS-4411 is closed by Thursday.',
    tokens: 30,
  },
  {
    seq: 4,
    role: 'user',
    author: 'ben',
    text: '@ebb can you draft the announcement for #releases?',
    tokens: 20,
  },
];

export function input(overrides: Partial<SummarizeInput> = {}): SummarizeInput {
  return {
    channelKey: 'slack:T1:C1',
    fromSeq: 1,
    toSeq: 4,
    earlierSummaries: [],
    messages: CONVERSATION,
    maxTokens: 400,
    ...overrides,
  };
}

export const GOOD_REPLY = {
  summary: '## Decisions\n- Ship v2.3.1 Friday 14:00 UTC if OPS-4411 is closed by Thursday (ana, #3).',
  memories: [
    {
      type: 'decision',
      text: 'v2.3.1 ships Friday 14:00 UTC if OPS-4411 is closed by Thursday.',
      importance: 0.9,
      speaker: 'ana',
      fromSeq: 1,
      toSeq: 3,
    },
  ],
};

export const userText = (request: RecordedRequest | undefined) =>
  String(request?.body.messages[1]?.content ?? '');
export const systemText = (request: RecordedRequest | undefined) =>
  String(request?.body.messages[0]?.content ?? '');
export const schemaName = (request: RecordedRequest) =>
  request.body.response_format?.type === 'json_schema'
    ? request.body.response_format.json_schema.name
    : undefined;
/** The seqs whose lines a summary request shows, in order. */
export const seqsIn = (request: RecordedRequest) =>
  [...userText(request).matchAll(/^\[#(\d+)\]/gm)].map((m) => Number(m[1]));
