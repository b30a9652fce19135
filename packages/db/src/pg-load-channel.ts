/**
 * A channel's working context and calibration in one statement: what the bot's context cache loads
 * on a miss, and what a reload reads. One round trip (the read-only transaction it replaces took
 * five: begin, the channel row, the spans, the raw messages, commit) and one snapshot (a statement
 * sees one). Nothing in it grows with the archived history: the active spans come by their partial
 * index, the raw messages after the compacted prefix by the primary key's range.
 *
 * A cache that follows another writer's appends reads only their tail (`loadContextAfter`): the
 * channel row and the raw messages after a seq, by the same range of the primary key, each message
 * built by the same expression as the whole context's.
 */
import {
  type ContextDelta,
  type ContextMessage,
  type ContextView,
  type LoadedChannel,
  UNCALIBRATED,
} from '@ebb/core';
import { type SQL, sql } from 'drizzle-orm';
import type { EbbDatabase } from './ebb-database.js';
import { type SpanFields, toSpan } from './pg-channel-rows.js';
import { rowsOf, withoutNulls } from './rows.js';
import { channels, contextSpans, messages } from './schema.js';

const EMPTY: LoadedChannel = Object.freeze({
  context: Object.freeze({ generation: 0, headSeq: 0, spans: [], raw: [], tokens: 0 }),
  calibration: UNCALIBRATED,
});

/** The channel row's counters and the raw messages, as both statements read them. */
interface CountersRow {
  readonly generation: number;
  readonly head_seq: number;
  readonly span_tokens: number;
  readonly raw_tokens: number;
  /** Each message with null for what it lacks; `withoutNulls` makes them the core's optional fields. */
  readonly raw: readonly Record<keyof ContextMessage, unknown>[];
}

interface LoadedRow extends CountersRow {
  readonly factor: number;
  readonly samples: number;
  readonly spans: readonly SpanFields[];
}

/**
 * The raw messages of channel row `c` with a seq past `after`, oldest first, as one JSON array: the
 * context's copy where it has one (clipped, or a stub), else the archived text.
 */
function rawAfter(after: SQL): SQL {
  return sql`coalesce((
        select json_agg(json_build_object(
          'seq', m.seq, 'role', m.role, 'author', m.author,
          'text', coalesce(m.context_content, m.content), 'tokens', m.context_tokens,
          'omittedTokens', m.omitted_tokens, 'stubbed', case when m.stubbed then true end,
          'ts', m.ts, 'toolCalls', m.tool_calls, 'toolCallId', m.tool_call_id) order by m.seq)
        from ${messages} m where m.channel_key = c.key and m.seq > ${after}
      ), '[]')`;
}

function toRaw(row: CountersRow): ContextMessage[] {
  return row.raw.map((message) => withoutNulls(message) as unknown as ContextMessage);
}

export async function loadChannel(db: EbbDatabase, channelKey: string): Promise<LoadedChannel> {
  // json_agg keeps each list in one column of the one row; `active` is the bare column so the
  // planner uses the partial index on active spans.
  const result = await db.execute(sql`
    select c.generation, c.head_seq, c.span_tokens, c.raw_tokens,
      c.calibration_factor as factor, c.calibration_samples as samples,
      coalesce((
        select json_agg(json_build_object(
          'kind', s.kind, 'fromSeq', s.from_seq, 'toSeq', s.to_seq, 'text', s.text, 'tokens', s.tokens,
          'createdGeneration', s.created_generation, 'jobId', s.job_id) order by s.from_seq)
        from ${contextSpans} s where s.channel_key = c.key and s.active
      ), '[]') as spans,
      ${rawAfter(sql`c.prefix_end`)} as raw
    from ${channels} c where c.key = ${channelKey}`);
  const row = rowsOf<LoadedRow>(result)[0];
  if (!row) return EMPTY;
  const context: ContextView = {
    generation: row.generation,
    headSeq: row.head_seq,
    spans: row.spans.map(toSpan),
    raw: toRaw(row),
    tokens: row.span_tokens + row.raw_tokens,
  };
  return { context, calibration: { factor: row.factor, samples: row.samples } };
}

/**
 * `TurnLog.loadAfter`: the channel row and its raw messages after `afterSeq` (never those inside the
 * compacted prefix), in one statement.
 */
export async function loadContextAfter(
  db: EbbDatabase,
  channelKey: string,
  afterSeq: number,
): Promise<ContextDelta> {
  const result = await db.execute(sql`
    select c.generation, c.head_seq, c.span_tokens, c.raw_tokens,
      ${rawAfter(sql`greatest(c.prefix_end, ${afterSeq}::integer)`)} as raw
    from ${channels} c where c.key = ${channelKey}`);
  const row = rowsOf<CountersRow>(result)[0];
  if (!row) return { generation: 0, headSeq: 0, tokens: 0, raw: [] };
  return {
    generation: row.generation,
    headSeq: row.head_seq,
    tokens: row.span_tokens + row.raw_tokens,
    raw: toRaw(row),
  };
}
