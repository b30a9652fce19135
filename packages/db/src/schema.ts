/**
 * Ebb's tables (drizzle, pg-core). One schema for Postgres and PGlite; `drizzle-kit generate` writes
 * the migrations in `/migrations` from it. Nothing here is ever deleted by compaction: messages are
 * the archive, spans are retired (`active = false`) rather than removed, runs are the audit trail.
 *
 * No foreign keys: drizzle-kit qualifies their targets with `"public"`, which would tie the tables
 * to one schema (tests run each file in a schema of its own); the stores are the only writers and
 * create a channel's row in the statement that first needs it.
 */
import type { MemoryType, SummaryOutput, ToolCall } from '@ebb/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const tsvector = customType<{ data: string }>({
  dataType: () => 'tsvector',
});

const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();

export const channels = pgTable(
  'channels',
  {
    /** `slack:<team>:<channel>[:<thread_ts>]`, `discord:<guild>:<channel>`, `web:<id>`. */
    key: text('key').primaryKey(),
    /** The key's first part: `slack`, `discord`, `web`. */
    platform: text('platform').notNull(),
    /**
     * Bumped by every write that changes the working context other than an append: a splice, a
     * truncation, stubs, an edit or a tombstone of a raw message, a summary written again. A context
     * cached at the same generation differs from the store's by appends alone (`TurnLog.loadAfter`).
     */
    generation: integer('generation').notNull().default(0),
    /** Seq of the newest archived message (0 when empty). */
    headSeq: integer('head_seq').notNull().default(0),
    /** Seq of the last message covered by active spans (k); messages k+1..head are raw in the context. */
    prefixEnd: integer('prefix_end').notNull().default(0),
    /** Tokens of the active spans. */
    spanTokens: integer('span_tokens').notNull().default(0),
    /** Context tokens of the raw messages prefix_end+1..head. */
    rawTokens: integer('raw_tokens').notNull().default(0),
    /** Tool results microcompaction has stubbed in this channel, ever, and the context tokens that saved. */
    stubbedResults: integer('stubbed_results').notNull().default(0),
    stubbedTokensSaved: bigint('stubbed_tokens_saved', { mode: 'number' }).notNull().default(0),
    /**
     * How many take-backs the channel has recorded (`take_backs.mark` of the newest): bumped under
     * the row lock with the tombstones, so a pass that read the count before its snapshot knows any
     * take-back with a higher mark came after what it read.
     */
    takeBackMark: integer('take_back_mark').notNull().default(0),
    /**
     * The greatest channel-lease fence an append brought (`AppendOptions.fence`): an append under a
     * lower one is refused, so a holder whose lease passed on cannot write. 0 before any.
     */
    fence: bigint('fence', { mode: 'number' }).notNull().default(0),
    calibrationFactor: doublePrecision('calibration_factor').notNull().default(1),
    calibrationSamples: integer('calibration_samples').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // A channel's threads by their key prefix (`findInThreads`, a deletion that names no thread). In
    // byte order, whatever the database's collation: under en-US a key's ':' weighs nothing, so
    // `slack:T:C1:1700.1` falls outside ['slack:T:C1:', 'slack:T:C1;') in the primary key's order.
    index('channels_key_bytes_idx').on(sql`${t.key} collate "C"`),
  ],
);

export const messages = pgTable(
  'messages',
  {
    channelKey: text('channel_key').notNull(),
    seq: integer('seq').notNull(),
    role: text('role', { enum: ['user', 'assistant', 'tool'] }).notNull(),
    author: text('author').notNull(),
    /** The whole text, forever. */
    content: text('content').notNull(),
    /**
     * The copy the context holds: the clipped text of a message above the per-message cap, or the
     * stub microcompaction put in place of a tool result (`stubbed`).
     */
    contextContent: text('context_content'),
    /** Tokens of the whole message. */
    tokens: integer('tokens').notNull(),
    /** Tokens of the message as it enters the context. */
    contextTokens: integer('context_tokens').notNull(),
    omittedTokens: integer('omitted_tokens'),
    /** Microcompaction stubbed this tool result: `context_content` is the stub, and a pass reads it. */
    stubbed: boolean('stubbed').notNull().default(false),
    platformMessageId: text('platform_message_id'),
    toolCalls: jsonb('tool_calls').$type<ToolCall[]>(),
    toolCallId: text('tool_call_id'),
    /**
     * A bot reply's provenance beyond its turn: the ids of the memories recalled into the prompt it
     * answered. A take-back that drops one of them takes the reply back too (it may have repeated it).
     */
    recalledMemories: jsonb('recalled_memories').$type<string[]>(),
    ts: text('ts'),
    createdAt: createdAt(),
    /**
     * What `search_history` matches (`PgArchiveSearch`): the text's first 100,000 characters
     * (`ARCHIVE_SEARCH.indexedChars`: a tsvector above 1 MB would fail the append) and the string
     * values of tool calls (names, arguments), through the English dictionary (stemmed, stop words
     * dropped), as memories are. Stored rather than an expression index: a search of a common word
     * walks the newest messages testing each row, and ranks its candidates, and re-parsing every
     * text there cost 15 µs a row, 40–800 ms a search on a million messages (BENCHMARKS.md).
     */
    search: tsvector('search').generatedAlwaysAs(
      sql`to_tsvector('english'::regconfig, left(content, 100000)) || jsonb_to_tsvector('english'::regconfig, coalesce(tool_calls, '[]'::jsonb), '["string"]'::jsonb)`,
    ),
  },
  (t) => [
    primaryKey({ columns: [t.channelKey, t.seq] }),
    uniqueIndex('messages_platform_message_id_idx').on(t.channelKey, t.platformMessageId),
    index('messages_search_idx').using('gin', t.search),
    // search_history's author filter (case-insensitive): without it, a common word by one author
    // reads every message holding the word (200 ms on a million); with it, only that author's.
    index('messages_author_idx').on(t.channelKey, sql`lower(${t.author})`, t.seq),
    // A take-back's replies that recalled a dropped memory (`findRecalling`): only replies that
    // recalled something are indexed.
    index('messages_recalled_idx')
      .using('gin', t.recalledMemories)
      .where(sql`${t.recalledMemories} is not null`),
    check('messages_role_check', sql`${t.role} in ('user', 'assistant', 'tool')`),
  ],
);

export const contextSpans = pgTable(
  'context_spans',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    channelKey: text('channel_key').notNull(),
    fromSeq: integer('from_seq').notNull(),
    toSeq: integer('to_seq').notNull(),
    kind: text('kind', { enum: ['summary', 'truncated'] }).notNull(),
    /** The summary; null for a truncation marker. */
    text: text('text'),
    tokens: integer('tokens').notNull(),
    createdGeneration: integer('created_generation').notNull(),
    /** The compaction job of a summary. */
    jobId: text('job_id'),
    active: boolean('active').notNull().default(true),
    /** The generation whose splice or truncation replaced this span. */
    retiredGeneration: integer('retired_generation'),
    createdAt: createdAt(),
  },
  (t) => [
    // Active spans tile 1..k, so no two start at the same seq. The predicate is the bare column:
    // queries say `active` (not a bound parameter) so the planner can use this index.
    uniqueIndex('context_spans_active_idx').on(t.channelKey, t.fromSeq).where(sql`active`),
    check('context_spans_kind_check', sql`${t.kind} in ('summary', 'truncated')`),
    check('context_spans_range_check', sql`${t.fromSeq} <= ${t.toSeq}`),
  ],
);

export const memories = pgTable(
  'memories',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** Where it may be recalled: a channel key, or a workspace/guild scope. */
    scope: text('scope').notNull(),
    /** The channel it was extracted from. */
    channelKey: text('channel_key').notNull(),
    type: text('type').$type<MemoryType>().notNull(),
    text: text('text').notNull(),
    importance: real('importance').notNull(),
    speaker: text('speaker'),
    fromSeq: integer('from_seq').notNull(),
    toSeq: integer('to_seq').notNull(),
    /** `memoryFingerprint(type, text)`: a retried or near-duplicate extraction refreshes this row. */
    fingerprint: text('fingerprint').notNull(),
    search: tsvector('search').generatedAlwaysAs(sql`to_tsvector('english'::regconfig, text)`),
    createdAt: createdAt(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('memories_scope_fingerprint_idx').on(t.scope, t.fingerprint),
    index('memories_search_idx').using('gin', t.search),
    index('memories_channel_key_idx').on(t.channelKey),
  ],
);

export const compactionRuns = pgTable(
  'compaction_runs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    jobId: text('job_id').notNull().unique('compaction_runs_job_id_key'),
    channelKey: text('channel_key').notNull(),
    tier: text('tier', { enum: ['background', 'aggressive', 'emergency'] }).notNull(),
    status: text('status', {
      enum: ['queued', 'running', 'completed', 'failed', 'stale', 'skipped'],
    }).notNull(),
    /** Usage when triggered (NaN when the worker recorded the run). */
    usage: doublePrecision('usage').notNull(),
    fromSeq: integer('from_seq').notNull(),
    toSeq: integer('to_seq').notNull(),
    generation: integer('generation').notNull(),
    /** What the pass was asked to keep (`/compact <focus>`): a job Redis lost is enqueued again with it. */
    focus: text('focus'),
    /** A follow-up: the job id of the pass whose range ends right before this one's (the job's `after`). */
    after: text('after_job_id'),
    attempts: integer('attempts').notNull().default(0),
    tokensBefore: integer('tokens_before'),
    tokensAfter: integer('tokens_after'),
    summaryTokens: integer('summary_tokens'),
    memoriesAdded: integer('memories_added'),
    model: text('model'),
    fallback: boolean('fallback'),
    inputTokens: integer('input_tokens'),
    outputTokens: integer('output_tokens'),
    durationMs: integer('duration_ms'),
    error: text('error'),
    /** The summarizer's output, checkpointed so a retried job reuses it. */
    output: jsonb('output').$type<SummaryOutput>(),
    createdAt: createdAt(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    index('compaction_runs_channel_created_idx').on(t.channelKey, t.createdAt.desc()),
    // The reconciler's scan: the few unfinished runs among every run ever made.
    index('compaction_runs_unfinished_idx').on(t.createdAt).where(sql`${t.status} in ('queued', 'running')`),
  ],
);

/**
 * What each channel's model calls took, summed per hour, model and purpose (`reply`: the bot's
 * answers; `summary`: the worker's passes): `ebb status` and the dashboard read a channel's last day
 * of tokens, cached tokens and cost from here. One upsert per answered turn and per pass, off the
 * turn's path.
 */
export const llmUsage = pgTable(
  'llm_usage',
  {
    channelKey: text('channel_key').notNull(),
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    purpose: text('purpose', { enum: ['reply', 'summary'] }).notNull(),
    model: text('model').notNull(),
    calls: integer('calls').notNull().default(0),
    promptTokens: bigint('prompt_tokens', { mode: 'number' }).notNull().default(0),
    cachedTokens: bigint('cached_tokens', { mode: 'number' }).notNull().default(0),
    completionTokens: bigint('completion_tokens', { mode: 'number' }).notNull().default(0),
    /** Turns answered (reply rows), and those that came after a silence longer than the cache lifetime. */
    replies: integer('replies').notNull().default(0),
    coldReplies: integer('cold_replies').notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.channelKey, t.hour, t.purpose, t.model] }),
    // The dashboard's and ebb status's read of every channel's last day.
    index('llm_usage_hour_idx').on(t.hour),
  ],
);

/**
 * The spend limits channels reached (`[budget]`), one row per limit and period (`noticeKey`:
 * channel, scope, period): the replica that inserts it sends the channel's one notice and logs
 * `budget.reached`; every other replica, and a restarted one, finds it there.
 */
export const budgetNotices = pgTable(
  'budget_notices',
  {
    noticeKey: text('notice_key').notNull(),
    periodStart: timestamp('period_start', { withTimezone: true }).notNull(),
    reachedAt: timestamp('reached_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.noticeKey, t.periodStart] })],
);

/**
 * What a person (or a retention sweep, or `ebb forget`) took back, one row per change: written in the
 * transaction that tombstones the messages, so it outlives any process. The seqs it covers are the
 * source every derived copy is traced from: memories whose source range holds one, summaries over one,
 * checkpoints of runs over one, the bot's replies derived from them. A pass whose snapshot predates a
 * take-back over its range (`mark` above the mark it read) cannot checkpoint, store memories from or
 * splice what it read. `pending` until every copy is rewritten; any bot or worker claims a pending row
 * whose lease ran out (`claimed_until`) and finishes it.
 */
export const takeBacks = pgTable(
  'take_backs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    channelKey: text('channel_key').notNull(),
    /** The channel's `take_back_mark` this take-back set (1, 2, … per channel). */
    mark: integer('mark').notNull(),
    kind: text('kind', { enum: ['deleted', 'edited', 'forget', 'retention'] }).notNull(),
    /** The seqs taken back, as ranges, and their bounds (for the overlap test). */
    ranges: jsonb('ranges').$type<{ fromSeq: number; toSeq: number }[]>().notNull(),
    fromSeq: integer('from_seq').notNull(),
    toSeq: integer('to_seq').notNull(),
    /** The platform ids taken back: the spool's files are scrubbed of them. */
    platformMessageIds: jsonb('platform_message_ids').$type<string[]>().notNull(),
    status: text('status', { enum: ['pending', 'completed'] })
      .notNull()
      .default('pending'),
    attempts: integer('attempts').notNull().default(0),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    /** What completing it reached (counts, never text). */
    memories: integer('memories'),
    checkpoints: integer('checkpoints'),
    summaries: integer('summaries'),
    error: text('error'),
    createdAt: createdAt(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('take_backs_channel_mark_idx').on(t.channelKey, t.mark),
    index('take_backs_pending_idx').on(t.createdAt).where(sql`${t.status} = 'pending'`),
    check('take_backs_range_check', sql`${t.fromSeq} <= ${t.toSeq}`),
  ],
);
