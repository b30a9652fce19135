/**
 * Transcripts for `ebb simulate`: JSON Lines, one message a line,
 * `{"role":"user"|"assistant"|"tool","author":"…","text":"…","ts":"…"}` (a line without `role` is a
 * participant's message, `user`, as an export of a chat's messages has none), with `toolCalls`
 * (`[{"id","name","arguments"}]`) on an assistant message that calls tools and `toolCallId` on each
 * result. Read as a stream so a 100,000-message file never sits in memory as one string.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { TranscriptMessage } from '@ebb/core';
import { z } from 'zod';
import { BotError } from '../errors.js';

const TranscriptLine = z
  .strictObject({
    role: z.enum(['user', 'assistant', 'tool']).default('user'),
    author: z.string().min(1),
    text: z.string(),
    ts: z.string().optional(),
    /** An assistant message's tool calls; their results are the `tool` lines right after it. */
    toolCalls: z
      .array(z.strictObject({ id: z.string().min(1), name: z.string().min(1), arguments: z.string() }))
      .optional(),
    /** A tool result: the id of the call it answers. */
    toolCallId: z.string().min(1).optional(),
  })
  .refine((m) => m.toolCalls === undefined || m.role === 'assistant', {
    message: 'only an assistant message makes tool calls',
    path: ['toolCalls'],
  })
  .refine((m) => (m.role === 'tool') === (m.toolCallId !== undefined), {
    message: 'a tool message, and only a tool message, answers a call (toolCallId)',
    path: ['toolCallId'],
  });

export class TranscriptError extends BotError {
  constructor(
    readonly file: string,
    readonly line: number,
    problem: string,
  ) {
    super(`${file}:${line}: ${problem}`, { code: 'transcript_malformed' });
  }
}

/** Parses one line; `line` is 1-based, for the error. */
export function parseTranscriptLine(text: string, file: string, line: number): TranscriptMessage {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new TranscriptError(file, line, `not valid JSON (${(err as Error).message})`);
  }
  const parsed = TranscriptLine.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`);
    throw new TranscriptError(file, line, problems.join('; '));
  }
  return withoutUndefined(parsed.data);
}

/** The messages of a transcript file in order; blank lines are skipped. */
export async function* readTranscript(file: string): AsyncGenerator<TranscriptMessage> {
  const lines = createInterface({
    input: createReadStream(file, 'utf8'),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let n = 0;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    yield parseTranscriptLine(text, file, n);
  }
}

/** The message without the optional fields the line left out (the core's optional fields are absent, not undefined). */
function withoutUndefined(line: z.output<typeof TranscriptLine>): TranscriptMessage {
  const { ts, toolCalls, toolCallId, ...rest } = line;
  return {
    ...rest,
    ...(ts === undefined ? {} : { ts }),
    ...(toolCalls === undefined ? {} : { toolCalls }),
    ...(toolCallId === undefined ? {} : { toolCallId }),
  };
}
