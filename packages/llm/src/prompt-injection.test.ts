/**
 * Untrusted content stays data: every hostile string of the shared table, planted in each place chat
 * text reaches a prompt, is sent through the real openai client to the fake server, and the request
 * the server recorded is parsed. Only the operator's system prompt is a system message, and each
 * planted string (found by ASCII canaries around it) lies inside the delimiters built for it, which
 * stay intact: one open and one close per block, no forged line.
 */
import {
  type ChatMessage,
  CONTINUATION_NOTE,
  type ContextMessage,
  MEMORY_TYPES,
  type Memory,
  REFERENCE_RULE,
  renderContext,
  type Span,
  type StoredMessage,
  type Tokenizer,
  TRUNCATION_MARKER,
  WorkingContext,
} from '@ebb/core';
import { HOSTILE_INPUTS } from '@ebb/testing/hostile-inputs';
import { FakeOpenAiServer, type RecordedRequest } from '@ebb/testing/openai';
import {
  ANGLE_BRACKETS,
  HIDDEN_CHARACTERS,
  modelLines,
  parseFencedBlocks,
  parseReferenceBlock,
} from '@ebb/testing/prompt-blocks';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtractiveSummarizer } from './extractive-summarizer.js';
import { OpenAiChatModel } from './openai-chat-model.js';
import { OpenAiSummarizer } from './openai-summarizer.js';
import { loadTokenizer } from './tokenizer.js';

const SYSTEM_PROMPT = 'You are Ebb, the assistant of the platform team.';
const MEMORY_TEXT = 'Deploys happen on Tuesdays';
const AUTHOR_TEXT = 'hello from a stranger';

let tokenizer: Tokenizer;
let server: FakeOpenAiServer;
let client: OpenAI;

beforeAll(async () => {
  tokenizer = await loadTokenizer('o200k_base');
  server = await FakeOpenAiServer.start();
  client = new OpenAI({ baseURL: server.url, apiKey: 'sk-test', maxRetries: 0 });
});

afterAll(async () => {
  await server?.close();
});

/** ASCII markers around a planted string; they survive any quoting, so they show where it landed. */
function plant(place: string, text: string) {
  const start = `zqz${place}start`;
  const end = `zqz${place}end`;
  return { value: `${start} ${text} ${end}`, start, end };
}

type Plant = ReturnType<typeof plant>;

/** The indexes of the strings in `texts` that hold a marker of `p`. */
function holders(texts: readonly string[], p: Plant): number[] {
  return texts.flatMap((t, i) => (t.includes(p.start) || t.includes(p.end) ? [i] : []));
}

async function lastRequest(send: () => Promise<unknown>): Promise<RecordedRequest> {
  const before = server.requests.length;
  await send();
  const request = server.requests.at(-1);
  expect(server.requests.length).toBe(before + 1);
  if (!request) throw new Error('no request was recorded');
  return request;
}

function contents(request: RecordedRequest): { role: string; content: string }[] {
  return request.body.messages.map((m) => ({ role: m.role, content: String(m.content ?? '') }));
}

/** What a label counts as characters: code points, entities back to the one character they stand for. */
function labelChars(label: string): number {
  return Array.from(label.replaceAll('&lt;', '<').replaceAll('&gt;', '>')).length;
}

function expectQuotedPayload(payload: string) {
  expect(ANGLE_BRACKETS.test(payload)).toBe(false);
  expect(HIDDEN_CHARACTERS.test(payload)).toBe(false);
}

describe.each(HOSTILE_INPUTS)('hostile input "$name"', ({ text }) => {
  it('reaches the chat model only as a chat message or inside its reference block', async () => {
    const chatText = plant('chat', text);
    const author = plant('author', text);
    const memoryText = plant('memorytext', text);
    const memorySpeaker = plant('memoryspeaker', text);
    const summaryText = plant('summary', text);

    const memory = (id: string, fields: Partial<Memory>): Memory => ({
      id,
      type: 'decision',
      text: MEMORY_TEXT,
      importance: 0.9,
      scope: 'web:x',
      fromSeq: 1,
      toSeq: 1,
      ...fields,
    });
    const spans: Span[] = [
      {
        kind: 'summary',
        fromSeq: 1,
        toSeq: 10,
        text: summaryText.value,
        tokens: 0,
        createdGeneration: 1,
        jobId: 'j1',
      },
      { kind: 'truncated', fromSeq: 11, toSeq: 12, tokens: 0, createdGeneration: 1 },
    ];
    const raw: ContextMessage[] = [
      { seq: 13, role: 'user', author: 'ana', text: chatText.value, tokens: 0 },
      { seq: 14, role: 'user', author: author.value, text: AUTHOR_TEXT, tokens: 0 },
      { seq: 15, role: 'assistant', author: 'ebb', text: 'Noted.', tokens: 0 },
    ];
    const messages: ChatMessage[] = renderContext({
      systemPrompt: SYSTEM_PROMPT,
      memories: [
        memory('m1', { speaker: 'ana' }),
        memory('m2', { text: memoryText.value, speaker: 'bo' }),
        memory('m3', { speaker: memorySpeaker.value }),
      ],
      context: new WorkingContext({ spans, raw, headSeq: 15 }).view(),
    });
    const model = new OpenAiChatModel({ client, model: 'gpt-4o-mini', maxOutputTokens: 100 });
    const sent = contents(await lastRequest(() => model.reply(messages)));

    // One system message: the operator's prompt and our fixed rule, nothing from the channel.
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'user', 'user', 'user', 'assistant', 'user']);
    expect(sent[0]?.content).toBe(`${SYSTEM_PROMPT}\n\n${REFERENCE_RULE}`);
    // The memories come last, after the conversation, where a change of them leaves the prefix cacheable.
    const [, summary, marker, chat, byAuthor, , memories] = sent.map((m) => m.content);

    // Memories: one block, one line per memory, each `- (type[, speaker]) text`.
    const memoryBlock = parseReferenceBlock(memories ?? '', 'ebb-memories');
    expectQuotedPayload(memoryBlock.payload);
    expect(memoryBlock.after).toBe('');
    const lines = modelLines(memoryBlock.payload);
    expect(lines).toHaveLength(3);
    const header = new RegExp(`^- \\((${MEMORY_TYPES.join('|')})(, [^\\n]+)?\\) `);
    for (const line of lines) expect(line).toMatch(header);
    expect(lines[0]).toBe(`- (decision, ana) ${MEMORY_TEXT}`);
    expect(holders(lines, memoryText)).toEqual([1]);
    expect(lines[1]?.startsWith('- (decision, bo) zqzmemorytextstart')).toBe(true);
    expect(holders(lines, memorySpeaker)).toEqual([2]);
    const speaker = lines[2]?.slice('- (decision, '.length, -`) ${MEMORY_TEXT}`.length) ?? '';
    expect(speaker.startsWith('zqzmemoryspeakerstart')).toBe(true);
    expect(labelChars(speaker)).toBeLessThanOrEqual(80);

    // The summary: one block, then our continuation note.
    const summaryBlock = parseReferenceBlock(summary ?? '', 'ebb-summary');
    expectQuotedPayload(summaryBlock.payload);
    expect(summaryBlock.attributes).toBe('messages="#1–#10"');
    expect(summaryBlock.after).toBe(`\n\n${CONTINUATION_NOTE}`);
    expect(summaryBlock.payload.startsWith(summaryText.start)).toBe(true);
    expect(summaryBlock.payload.endsWith(summaryText.end)).toBe(true);
    expect(marker).toBe(TRUNCATION_MARKER);

    // A chat message is the participant's own message, verbatim after its author.
    expect(chat).toBe(`ana: ${chatText.value}`);
    // An author is one line of at most 80 characters before the text.
    expect(byAuthor?.endsWith(`: ${AUTHOR_TEXT}`)).toBe(true);
    const label = byAuthor?.slice(0, -`: ${AUTHOR_TEXT}`.length) ?? '';
    expect(label.startsWith(author.start)).toBe(true);
    expect(modelLines(label)).toHaveLength(1);
    expect(labelChars(label)).toBeLessThanOrEqual(80);
    expectQuotedPayload(label);

    // Each planted string is where it was put and nowhere else.
    const all = sent.map((m) => m.content);
    expect(holders(all, memoryText)).toEqual([6]);
    expect(holders(all, memorySpeaker)).toEqual([6]);
    expect(holders(all, summaryText)).toEqual([1]);
    expect(holders(all, chatText)).toEqual([3]);
    expect(holders(all, author)).toEqual([4]);
  });

  it('reaches the summarizer only inside the fences of the transcript, the earlier summaries and the focus', async () => {
    const chatText = plant('chat', text);
    const author = plant('author', text);
    const toolOutput = plant('tool', text);
    const earlier = plant('earlier', text);
    const focus = plant('focus', text);
    const messages: StoredMessage[] = [
      { seq: 1, role: 'user', author: 'ana', text: chatText.value, tokens: 0 },
      { seq: 2, role: 'user', author: author.value, text: AUTHOR_TEXT, tokens: 0 },
      {
        seq: 3,
        role: 'assistant',
        author: 'ebb',
        text: 'Looking it up.',
        tokens: 0,
        toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }],
      },
      { seq: 4, role: 'tool', author: 'lookup', text: toolOutput.value, toolCallId: 'c1', tokens: 0 },
    ];
    server.enqueue({ json: { summary: '## Topics and threads\n- A chat.', memories: [] } });
    const request = await lastRequest(() =>
      summarizer().summarize({
        channelKey: 'web:x',
        fromSeq: 1,
        toSeq: 4,
        earlierSummaries: [earlier.value],
        messages,
        maxTokens: 300,
        focus: focus.value,
      }),
    );
    const [system, user] = contents(request);
    expect(contents(request).map((m) => m.role)).toEqual(['system', 'user']);
    for (const p of [chatText, author, toolOutput, earlier, focus])
      expect(holders([system?.content ?? ''], p)).toEqual([]);

    const { blocks, outside } = parseFencedBlocks(user?.content ?? '');
    expect(blocks.map((b) => b.label)).toEqual(['focus-request', 'earlier-summary-1', 'transcript']);
    for (const p of [chatText, author, toolOutput, earlier, focus]) expect(holders(outside, p)).toEqual([]);
    const [focusBlock, earlierBlock, transcript] = blocks;
    // The focus: one line, inside its own fence.
    expect(focusBlock?.lines).toHaveLength(1);
    expect(focusBlock?.lines[0]?.startsWith(focus.start)).toBe(true);
    expect(holders(earlierBlock?.lines ?? [], earlier).length).toBeGreaterThan(0);
    expectTranscript(transcript?.lines ?? [], [1, 2, 3, 4]);
    const shown = transcript?.lines.join('\n') ?? '';
    for (const p of [chatText, author, toolOutput]) expect(shown).toContain(p.start);
  });

  it('reaches the merge call only inside the fences of the summaries and the focus', async () => {
    const first = plant('first', text);
    const focus = plant('focus', text);
    server.enqueue({ json: { summary: '## Topics and threads\n- Merged.' } });
    const request = await lastRequest(() =>
      summarizer().summarize({
        channelKey: 'web:x',
        fromSeq: 1,
        toSeq: 20,
        earlierSummaries: [first.value, '## Decisions\n- Ship on Friday (ana).'],
        messages: [],
        maxTokens: 300,
        focus: focus.value,
      }),
    );
    const [system, user] = contents(request);
    expect(holders([system?.content ?? ''], first)).toEqual([]);
    expect(holders([system?.content ?? ''], focus)).toEqual([]);
    const { blocks, outside } = parseFencedBlocks(user?.content ?? '');
    expect(blocks.map((b) => b.label)).toEqual(['focus-request', 'summary-1-of-2', 'summary-2-of-2']);
    expect(holders(outside, first)).toEqual([]);
    expect(holders(outside, focus)).toEqual([]);
    expect(blocks[0]?.lines).toHaveLength(1);
    expect(holders(blocks[1]?.lines ?? [], first).length).toBeGreaterThan(0);
  });
});

function summarizer(): OpenAiSummarizer {
  return new OpenAiSummarizer({
    client,
    model: 'gpt-4o-mini',
    tokenizer,
    contextWindow: 128_000,
    timeoutMs: 5_000,
    retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    fallback: new ExtractiveSummarizer({ tokenizer }),
  });
}

/** One `[#seq] ` header per message, in order; every other line a four-space continuation. */
function expectTranscript(lines: readonly string[], seqs: readonly number[]) {
  const headers = lines.flatMap((l) => {
    const m = /^\[#(\d+)\] /.exec(l);
    return m ? [Number(m[1])] : [];
  });
  expect(headers).toEqual(seqs);
  for (const line of lines) {
    if (!/^\[#\d+\] /.test(line)) expect(line.startsWith('    ')).toBe(true);
  }
}
