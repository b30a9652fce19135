/**
 * The structured output of a summarizer call: the JSON schema sent as `response_format` (strict
 * mode: every property required, no extra properties) and the zod schemas that check the reply. A
 * reply that is not this shape is `llm_malformed_output`; a single memory of the wrong shape in it is
 * dropped. The values of a memory (its type, speaker, seqs, length, importance) are not judged here:
 * the compaction processor checks them with core's `validateMemories`, which counts what it rejects.
 */
import { MEMORY_TYPES, type ProposedMemory } from '@ebb/core';
import { z } from 'zod';
import { LlmError } from './errors.js';

const memoryJsonSchema = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: [...MEMORY_TYPES] },
    text: {
      type: 'string',
      description: 'One self-contained sentence; names, numbers, URLs and IDs verbatim.',
    },
    importance: { type: 'number', description: 'From 0 (trivia) to 1 (must never be forgotten).' },
    speaker: { type: ['string', 'null'], description: 'The author it came from, or null.' },
    fromSeq: { type: 'integer', description: 'The # of the first message it comes from.' },
    toSeq: { type: 'integer', description: 'The # of the last message it comes from.' },
  },
  required: ['type', 'text', 'importance', 'speaker', 'fromSeq', 'toSeq'],
  additionalProperties: false,
} as const;

export const SUMMARY_RESPONSE_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'channel_summary',
    strict: true,
    schema: {
      type: 'object',
      properties: {
        summary: { type: 'string', description: 'The structured summary, in Markdown.' },
        memories: { type: 'array', items: memoryJsonSchema },
      },
      required: ['summary', 'memories'],
      additionalProperties: false,
    },
  },
} as const;

export const MERGE_RESPONSE_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'merged_summary',
    strict: true,
    schema: {
      type: 'object',
      properties: { summary: { type: 'string', description: 'The merged summary, in Markdown.' } },
      required: ['summary'],
      additionalProperties: false,
    },
  },
} as const;

const replies: Record<'summary' | 'merge', z.ZodType<{ summary: string; memories: unknown[] }>> = {
  summary: z.strictObject({ summary: z.string(), memories: z.array(z.unknown()) }),
  merge: z.strictObject({ summary: z.string() }).transform((reply) => ({ ...reply, memories: [] })),
};

/** The shape of a memory in a reply; its values are `validateMemories`' business. */
const memoryReply = z.strictObject({
  type: z.string(),
  text: z.string(),
  importance: z.number(),
  speaker: z.string().nullish(),
  fromSeq: z.number(),
  toSeq: z.number(),
});

export interface ParsedSummary {
  readonly summary: string;
  readonly memories: readonly ProposedMemory[];
  /** Memories of the wrong shape, left out. */
  readonly dropped: number;
}

/**
 * Checks a reply's content. Memories are kept one by one as the model gave them; one of the wrong
 * shape (a field missing or of the wrong JSON type) is dropped.
 */
export function parseSummaryReply(content: string, kind: 'summary' | 'merge'): ParsedSummary {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch (error) {
    throw malformed('the reply is not JSON', error);
  }
  const parsed = replies[kind].safeParse(json);
  if (!parsed.success)
    throw malformed(`the reply does not match the schema: ${z.prettifyError(parsed.error)}`);
  const summary = parsed.data.summary.trim();
  if (summary === '') throw malformed('the reply has an empty summary');
  const memories: ProposedMemory[] = [];
  let dropped = 0;
  for (const candidate of parsed.data.memories) {
    const memory = memoryReply.safeParse(candidate);
    if (!memory.success) {
      dropped++;
      continue;
    }
    const { speaker, ...rest } = memory.data;
    memories.push({ ...rest, ...(speaker == null ? {} : { speaker }) });
  }
  return { summary, memories, dropped };
}

function malformed(message: string, cause?: unknown): LlmError {
  return new LlmError(message, { code: 'llm_malformed_output', retryable: true, cause });
}
