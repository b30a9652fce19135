/**
 * Transcripts for `ebb simulate`: JSON Lines, one message a line,
 * `{"role":"user"|"assistant","author":"…","text":"…","ts":"…"}`. Read as a stream so a
 * 100,000-message file never sits in memory as one string.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { TranscriptMessage } from '@ebb/core';
import { z } from 'zod';
import { BotError } from './errors.js';

const TranscriptLine = z.strictObject({
  role: z.enum(['user', 'assistant']),
  author: z.string().min(1),
  text: z.string(),
  ts: z.string().optional(),
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
  const { ts, ...rest } = parsed.data;
  return ts === undefined ? rest : { ...rest, ts };
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
