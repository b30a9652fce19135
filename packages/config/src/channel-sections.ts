/**
 * The seven sections a channel may override (`[llm]`, `[compaction]`, `[memory]`, `[bot]`, `[tools]`,
 * `[privacy]`, `[budget]`): their keys, checks and built-in defaults, one comment a key. `settings-schema.ts` makes
 * the two forms of them the file is parsed with (with defaults, and as a layer without).
 */
import {
  BUDGET_OVER,
  CACHE_RETENTIONS,
  HISTORY_TOOL_NAMES,
  REASONING_EFFORTS,
  TOKEN_LIMIT_PARAMS,
  TOKENIZER_ENCODINGS,
} from '@ebb/core';
import { z } from 'zod';
import {
  enumOf,
  fraction,
  modelName,
  mustBe,
  nonNegativeInt,
  positiveInt,
  TABLE,
  text,
  threshold,
} from './schema-leaves.js';

export const llmSchema = z.strictObject(
  {
    /** Chat model, as the OpenAI-compatible server names it. */
    model: modelName().default('gpt-5.4-mini'),
    /** The model's context window in tokens. */
    context_window: positiveInt().default(128_000),
    /** Tokens kept free for the reply. */
    max_output_tokens: positiveInt().default(4096),
    /** Any OpenAI-compatible server; unset means api.openai.com. */
    base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    /** Tokenizer; unset means derived from `model`. */
    encoding: enumOf(TOKENIZER_ENCODINGS).optional(),
    /**
     * The name the output cap is sent under: `auto` sends today's `max_completion_tokens` and
     * switches to `max_tokens` for a server that refuses it by name.
     */
    token_limit_param: enumOf(TOKEN_LIMIT_PARAMS).default('auto'),
    /** Name a `prompt_cache_key` (a hash of the channel key) on every request; false for a server that chokes on it. */
    prompt_cache_key: z.boolean(mustBe('true or false')).default(true),
    /**
     * OpenAI's cache retention (`in_memory`, `24h`), or `none` to send none. Unset: `24h` for the
     * OpenAI models documented to take it (`defaultCacheRetention`), none for any other model.
     */
    prompt_cache_retention: enumOf([...CACHE_RETENTIONS, 'none'] as const).optional(),
    /**
     * How long the provider keeps a prompt's prefix cached after its last use, for Ebb's estimates
     * (`ebb simulate`, `--suggest`): a reply after a longer silence pays its whole prompt. Unset:
     * 86400 when the retention sent is `24h`, else 300 (OpenAI's documented 5 to 10 minutes of
     * inactivity, at its short end).
     */
    cache_ttl_seconds: nonNegativeInt().optional(),
    /** Sampling temperature; unset sends none (reasoning models refuse any but the default). */
    temperature: z
      .number(mustBe('a number from 0 to 2'))
      .min(0, mustBe('a number from 0 to 2'))
      .max(2, mustBe('a number from 0 to 2'))
      .optional(),
    /** Passed to reasoning models; unset sends none (the model's default). */
    reasoning_effort: enumOf(REASONING_EFFORTS).optional(),
  },
  TABLE,
);

/**
 * `[compaction] working_tokens` unset (BENCHMARKS.md, "The working size"): on 20,000 messages of the
 * IRC transcript, 41% less input than the window's edge at 32k and 84% less at 128k, no emergency,
 * the same summarizer cost; a reply's cost grows with the size, so smaller is cheaper still, and
 * 12,000 keeps the last one to three hundred chat messages raw (the peers' Mastra OM keeps 12,000 too).
 */
export const DEFAULT_WORKING_TOKENS = 12_000;

/**
 * `[compaction] working_fraction` unset (BENCHMARKS.md, "Side by side with the peers"): a pass
 * under a working size frees 70% of the context. Every pass rewrites the prompt after the system
 * prompt, which the next reply pays uncached, so fewer and larger passes cost less: on the IRC
 * replay 30% made 53 such breaks per 1,000 replies and 70% made 18, and a bot answering one message
 * in ten paid 39% less. What is left, 3,600 tokens of a 12,000 working size, is still the last
 * hundred or so chat lines, raw.
 */
export const DEFAULT_WORKING_FRACTION = 0.7;

/**
 * `[memory] recall_max_tokens` unset: about ten one-sentence memories. The block is new at the end
 * of every prompt, so each token of it is paid uncached by every reply, warm cache or not (issue 34:
 * a 1,000-token budget made it most of a warm reply's uncached tail).
 */
export const DEFAULT_RECALL_MAX_TOKENS = 300;

export const compactionSchema = z.strictObject(
  {
    background_threshold: threshold().default(0.8),
    aggressive_threshold: threshold().default(0.85),
    emergency_threshold: threshold().default(0.95),
    /**
     * The context size compaction aims at, in tokens: a background pass starts once the prompt
     * holds this many (or at `background_threshold`, when that comes first); 0 aims at the window's
     * edge. The aggressive and emergency tiers stay where they are, relative to the window.
     */
    working_tokens: nonNegativeInt().default(DEFAULT_WORKING_TOKENS),
    /**
     * Share of the context a background pass summarizes when `working_tokens` started it (in place
     * of `background_fraction`, which applies at the window's edge).
     */
    working_fraction: fraction().default(DEFAULT_WORKING_FRACTION),
    background_fraction: fraction().default(0.3),
    aggressive_fraction: fraction().default(0.5),
    emergency_fraction: fraction().default(0.5),
    protect_recent: nonNegativeInt().default(10),
    /** Unset means min(4096, 8% of the context window, 10% of `working_tokens` when it is set). */
    summary_max_tokens: positiveInt().optional(),
    /** Unset means `llm.model`. */
    summarizer_model: modelName().optional(),
    cooldown_seconds: z
      .number(mustBe('a number of seconds >= 0'))
      .nonnegative(mustBe('a number of seconds >= 0'))
      .default(10),
    max_ineffective_passes: (() => {
      const error = mustBe('an integer >= 1');
      return z.number(error).int(error).min(1, error);
    })().default(3),
    /** Unset means 25% of the context window. */
    message_max_tokens: positiveInt().optional(),
    /**
     * Microcompaction, the tier below background: old tool results become short stubs pointing at
     * the archive, synchronously and with no LLM call.
     */
    microcompaction: z.boolean(mustBe('true or false')).default(true),
    /** Usage from which old tool results are stubbed (or `background_threshold`, when that is lower). */
    microcompact_threshold: threshold().default(0.6),
    /** The newest tool results that are never stubbed. */
    keep_tool_results: nonNegativeInt().default(3),
    /** Tool results smaller than this (tokens) are left whole: a stub would save too little. */
    microcompact_min_tokens: positiveInt().default(200),
  },
  TABLE,
);

export const memorySchema = z.strictObject(
  {
    scope: enumOf(['channel', 'workspace']).default('channel'),
    recall_max_tokens: nonNegativeInt().default(DEFAULT_RECALL_MAX_TOKENS),
  },
  TABLE,
);

export const botSchema = z.strictObject(
  {
    system_prompt: text('a non-empty string').default('You are Ebb, a helpful assistant in a team chat.'),
    respond_to: enumOf(['mentions', 'all']).default('mentions'),
  },
  TABLE,
);

/**
 * `[tools] allow`: patterns over tool names. A built-in tool is named bare (`search_history`); an MCP
 * tool `server.tool`; `*` matches any run of characters (`github.*`, `*`). The server part of a
 * pattern has no dot; a tool's name may (MCP allows letters, digits, `_`, `-` and `.`).
 */
const TOOL_PATTERN = /^[A-Za-z0-9_*-]+(\.[A-Za-z0-9_.*-]+)?$/;
const toolPattern = () =>
  z
    .string(mustBe('a tool pattern'))
    .regex(TOOL_PATTERN, mustBe('a built-in tool name or server.tool (letters, digits, _ - and * globs)'));

export const toolsSchema = z.strictObject(
  {
    /**
     * The tools the model may call in a channel. A more specific place replaces the list it
     * inherits. Default: the built-in history tools, which read only the channel's own archive; MCP
     * tools reach outside Ebb, so a channel gets them only where the operator names them.
     */
    allow: z
      .array(toolPattern(), mustBe('a list of tool patterns'))
      .readonly()
      .default([...HISTORY_TOOL_NAMES]),
    /** Model calls in one turn; the last is made without tools, so it answers in words. 1: no tools. */
    max_steps: (() => {
      const error = mustBe('an integer from 1 to 50');
      return z.number(error).int(error).min(1, error).max(50, error);
    })().default(6),
    /** Bound on one tool call; past it the call is cancelled and the model told so. */
    call_timeout_seconds: (() => {
      const error = mustBe('a number of seconds above 0 and at most 600');
      return z.number(error).gt(0, error).lte(600, error);
    })().default(30),
  },
  TABLE,
);

/**
 * `[privacy]`: what Ebb does when a person takes back what they posted. `on_delete`: `redact` makes a
 * deleted message a tombstone in the archive and the context, writes the summaries holding it again,
 * drops the memories that came from it and redacts the bot's reply to it; `ignore` keeps it all.
 * `on_edit`: `update` keeps only the new text in the archive and the raw context; `resummarize` also
 * writes the summaries holding the old text again; `ignore` keeps the old text.
 */
export const ON_DELETE = ['redact', 'ignore'] as const;
export const ON_EDIT = ['update', 'resummarize', 'ignore'] as const;

export const privacySchema = z.strictObject(
  {
    on_delete: enumOf(ON_DELETE).default('redact'),
    on_edit: enumOf(ON_EDIT).default('update'),
    /**
     * Messages older than this many days (by their platform time) are taken back by the retention
     * sweep, as a deletion takes a message back. Unset: kept for ever.
     */
    retain_days: positiveInt().optional(),
  },
  TABLE,
);

/**
 * `[budget]`: spend limits in USD at `[prices]` (docs/configuration.md, "Spend limits"), each counted
 * over the UTC day or month, of the channel's model calls (its replies and its passes) or of its whole
 * workspace's (a Slack team, a Discord guild, the web channel). Unset: no limit. `over`: what a
 * message gets once one is reached: `notice` (one message in the channel saying so and when it
 * resets, then none), `cheaper_model` (answered on `cheaper_model`), `silent` (no answer). Messages
 * are archived and passes run either way.
 */
const usd = () => {
  const error = mustBe('a number of US dollars above 0');
  return z.number(error).gt(0, error);
};

export const budgetSchema = z.strictObject(
  {
    daily_usd: usd().optional(),
    monthly_usd: usd().optional(),
    workspace_daily_usd: usd().optional(),
    workspace_monthly_usd: usd().optional(),
    over: enumOf(BUDGET_OVER).default('notice'),
    cheaper_model: modelName().optional(),
  },
  TABLE,
);
