/**
 * The zod schema of `config.toml`. Every table is a `z.strictObject`, so a misspelt key fails instead
 * of being ignored, and the built-in defaults live here, on the leaves of `settingsSchema`.
 *
 * The six overridable sections (`llm`, `compaction`, `memory`, `bot`, `tools`, `privacy`) exist in two forms:
 * `settingsSchema` carries the defaults and yields `BUILT_IN_DEFAULTS`; `settingsLayerSchema` has the
 * same leaves without defaults and parses every place in the file that may set them (the top-level
 * sections, the platform sections, the `[channels."<pattern>"]` blocks). A layer therefore holds only
 * what the operator wrote, which is what per-channel merging and source reporting need.
 *
 * Leaves whose default depends on other settings (`llm.encoding`, `compaction.summary_max_tokens`,
 * `compaction.summarizer_model`, `compaction.message_max_tokens`) have no schema default; they are
 * derived after merging, in `merge-settings.ts`.
 */
import {
  CACHE_RETENTIONS,
  HISTORY_TOOL_NAMES,
  REASONING_EFFORTS,
  TOKEN_LIMIT_PARAMS,
  TOKENIZER_ENCODINGS,
} from '@ebb/core';
import { z } from 'zod';

export const SECTIONS = ['llm', 'compaction', 'memory', 'bot', 'tools', 'privacy'] as const;
export type Section = (typeof SECTIONS)[number];

const mustBe = (expected: string) => ({ error: `must be ${expected}` });
const TABLE = mustBe('a table');
const oneOf = (values: readonly string[]) =>
  `one of ${values.map((value) => JSON.stringify(value)).join(', ')}`;

const text = (expected: string) => z.string(mustBe(expected)).min(1, mustBe(expected));
const modelName = () => text('a non-empty model name');
const positiveInt = () => {
  const error = mustBe('a positive integer');
  return z.number(error).int(error).positive(error);
};
const nonNegativeInt = () => {
  const error = mustBe('an integer >= 0');
  return z.number(error).int(error).nonnegative(error);
};
const threshold = () => {
  const error = mustBe('a number above 0 and at most 1');
  return z.number(error).gt(0, error).lte(1, error);
};
const fraction = () => {
  const error = mustBe('a number between 0 and 1 (exclusive)');
  return z.number(error).gt(0, error).lt(1, error);
};
const enumOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, mustBe(oneOf(values)));

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

/** The six overridable sections with every default filled in. */
export const settingsSchema = z.strictObject({
  llm: llmSchema.prefault({}),
  compaction: compactionSchema.prefault({}),
  memory: memorySchema.prefault({}),
  bot: botSchema.prefault({}),
  tools: toolsSchema.prefault({}),
  privacy: privacySchema.prefault({}),
});
export type Settings = z.output<typeof settingsSchema>;

/** The same leaves as `schema`, each optional and without its default. */
function overridable<T extends z.ZodObject>(schema: T): z.ZodType<Partial<z.output<T>>> {
  return z.strictObject(optionalShape(schema), TABLE) as unknown as z.ZodType<Partial<z.output<T>>>;
}

function optionalShape(schema: z.ZodObject): Record<string, z.ZodType> {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
    const inner = field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : field;
    shape[key] = inner instanceof z.ZodOptional ? inner : inner.optional();
  }
  return shape;
}

/**
 * Keys of an overridable section that set the process, not a channel: only the top-level table
 * takes them (`[bot] context_cache_mb`), and a platform or channel table that names one is told so.
 */
export const PROCESS_KEYS: { readonly [S in Section]?: readonly string[] } = { bot: ['context_cache_mb'] };

/**
 * The top-level `[bot]`: the channel keys as every layer has them, plus the process's own.
 * `context_cache_mb` bounds the bot's cache of working contexts (docs/configuration.md, "Sizing the context cache").
 */
const topBotSchema = z.strictObject(
  { ...optionalShape(botSchema), context_cache_mb: positiveInt().optional() },
  TABLE,
) as unknown as z.ZodType<Partial<z.output<typeof botSchema>> & { context_cache_mb?: number }>;
export const DEFAULT_CONTEXT_CACHE_MB = 512;

const layerShape = {
  llm: overridable(llmSchema).optional(),
  compaction: overridable(compactionSchema).optional(),
  memory: overridable(memorySchema).optional(),
  bot: overridable(botSchema).optional(),
  tools: overridable(toolsSchema).optional(),
  privacy: overridable(privacySchema).optional(),
};

/** What one place in the file sets of the overridable sections; absent keys are inherited. */
export const settingsLayerSchema = z.strictObject(layerShape, TABLE);
export type SettingsLayer = z.output<typeof settingsLayerSchema>;

const admins = () => z.array(text('a user id'), mustBe('a list of user ids')).default([]);

export const priceSchema = z.strictObject(
  {
    /** USD per million input tokens. */
    input_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')),
    /** USD per million input tokens the provider served from its prompt cache; unset: `input_per_mtok`. */
    cached_input_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')).optional(),
    /** USD per million output tokens. */
    output_per_mtok: z.number(mustBe('a price >= 0')).nonnegative(mustBe('a price >= 0')),
  },
  TABLE,
);
export type Price = z.output<typeof priceSchema>;

export const slackSchema = z.strictObject(
  {
    mode: enumOf(['socket', 'http']).default('socket'),
    admins: admins(),
    /** The Web API base (an Enterprise proxy, a test fake); unset means https://slack.com/api/. */
    api_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
    ...layerShape,
  },
  TABLE,
);
export const discordSchema = z.strictObject({ admins: admins(), ...layerShape }, TABLE);
export const webSchema = z.strictObject(
  {
    host: text('a host name or address').default('127.0.0.1'),
    port: (() => {
      const error = mustBe('a port number (1-65535)');
      return z.number(error).int(error).min(1, error).max(65_535, error);
    })().default(3000),
    /**
     * Opens the web channel's API (`/api/channels/*`) to anyone who reaches the port when
     * EBB_ADMIN_TOKEN is unset. Without it, a `host` beyond loopback needs EBB_ADMIN_TOKEN or Ebb
     * refuses to start. Logged as a warning at every start.
     */
    public_api: z.boolean(mustBe('true or false')).default(false),
    /** Largest request body the web channel (and Slack's Events API receiver) reads, in KiB; 413 past it. */
    max_body_kb: positiveInt().default(256),
    /**
     * Requests a client (by address) may make to the web channel's API per minute, and credentials it
     * may have refused on any route (a bucket of their own); 0: no limit.
     */
    rate_limit_per_minute: nonNegativeInt().default(120),
    /** Requests a client may make at once before the per-minute rate applies. */
    rate_limit_burst: positiveInt().default(60),
    ...layerShape,
  },
  TABLE,
);
/** How the process stops on SIGTERM or SIGINT (see docs/operations.md, "Stopping"). */
export const shutdownSchema = z.strictObject(
  {
    /** Seconds the turns already taken get to finish and answer before the process closes anyway. */
    grace_seconds: positiveInt().default(20),
  },
  TABLE,
);
/**
 * `[mcp.servers.NAME]`: an MCP server whose tools the model may call as `NAME.tool` (where `[tools]
 * allow` lets it). Either a process Ebb starts and talks to over stdio (`command`, `args`, `env`) or
 * a streamable HTTP endpoint (`url`, `headers`). Values of `env` and `headers` may name environment
 * variables: `"env:NAME"` is the variable's value, `"Bearer ${NAME}"` puts it inside a text; secrets
 * belong there, never in the file. A stdio server gets only the safe basics of Ebb's environment
 * (PATH, HOME, …) plus its `env`.
 */
const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,31}$/;
const serverName = () =>
  z
    .string()
    .regex(
      SERVER_NAME,
      'must be letters, digits, - and single _ (at most 32, no __), so NAME.tool maps to the wire',
    );
const ENV_VALUE = 'a string: a literal, "env:NAME" or text with $' + '{NAME}';
const envValues = () => z.record(z.string(), z.string(mustBe(ENV_VALUE)), TABLE);

export const mcpServerSchema = z
  .strictObject(
    {
      /** stdio: the program to start. */
      command: text('a non-empty command').optional(),
      args: z.array(z.string(mustBe('a string')), mustBe('a list of strings')).optional(),
      /** stdio: variables for the process; `"env:NAME"` / `"${NAME}"` take them from Ebb's environment. */
      env: envValues().optional(),
      /** streamable HTTP: the MCP endpoint. */
      url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
      /** streamable HTTP: request headers; `"env:NAME"` / `"Bearer ${NAME}"` from the environment. */
      headers: envValues().optional(),
    },
    TABLE,
  )
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: server.url === undefined ? [] : ['url'],
        message: 'must set exactly one of command (a server over stdio) and url (a streamable HTTP server)',
      });
      return;
    }
    const misplaced = server.url === undefined ? ['headers'] : ['args', 'env'];
    for (const key of misplaced) {
      if ((server as Record<string, unknown>)[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `is only for ${key === 'headers' ? 'a server with url' : 'a server with command'}`,
        });
      }
    }
  });
export type McpServerSection = z.output<typeof mcpServerSchema>;

export const mcpSchema = z.strictObject(
  { servers: z.record(serverName(), mcpServerSchema, TABLE).default({}) },
  TABLE,
);
export type McpSection = z.output<typeof mcpSchema>;

export type SlackSection = z.output<typeof slackSchema>;
export type DiscordSection = z.output<typeof discordSchema>;
export type WebSection = z.output<typeof webSchema>;
export type ShutdownSection = z.output<typeof shutdownSchema>;

/** The whole file. */
export const configFileSchema = z.strictObject({
  ...layerShape,
  bot: topBotSchema.optional(),
  prices: z.record(modelName(), priceSchema, TABLE).default({}),
  slack: slackSchema.prefault({}),
  discord: discordSchema.prefault({}),
  web: webSchema.prefault({}),
  shutdown: shutdownSchema.prefault({}),
  mcp: mcpSchema.prefault({}),
  channels: z.record(text('a non-empty channel pattern'), settingsLayerSchema, TABLE).default({}),
});
export type ConfigFile = z.output<typeof configFileSchema>;

/** The TOML keys of each overridable section, in schema order. */
export const SECTION_KEYS: { readonly [S in Section]: readonly (keyof Settings[S] & string)[] } = {
  llm: Object.keys(llmSchema.shape) as (keyof Settings['llm'] & string)[],
  compaction: Object.keys(compactionSchema.shape) as (keyof Settings['compaction'] & string)[],
  memory: Object.keys(memorySchema.shape) as (keyof Settings['memory'] & string)[],
  bot: Object.keys(botSchema.shape) as (keyof Settings['bot'] & string)[],
  tools: Object.keys(toolsSchema.shape) as (keyof Settings['tools'] & string)[],
  privacy: Object.keys(privacySchema.shape) as (keyof Settings['privacy'] & string)[],
};
