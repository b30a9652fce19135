/**
 * @ebb/config: `config.toml` → smol-toml → zod (strict tables, defaults in the schema) → per-channel
 * merge → cross-field rules on every merged result → a deeply frozen `EbbConfig`. `resolveChannel`
 * then gives any channel key its settings. This package is the only reader of `process.env` (today
 * only `EBB_CONFIG`, the config path; secrets never live in the file).
 *
 * Precedence, lowest first; each level replaces only the keys it sets:
 *   1. built-in defaults (`config-schema.ts`; a few are derived from other settings after merging:
 *      `llm.encoding` from `llm.model`, `compaction.summary_max_tokens` and
 *      `compaction.message_max_tokens` from `llm.context_window`, `compaction.summarizer_model` = `llm.model`)
 *   2. the sections `[llm]`, `[compaction]`, `[memory]`, `[bot]`, `[tools]`
 *   3. the sub-tables of the channel's platform section, `[slack]`, `[discord]` or `[web]`, chosen by the
 *      key's prefix (`slack:…`, `discord:…`, `web:…`)
 *   4. every `[channels."<pattern>"]` whose glob matches the key (`*` matches anything, `:` included),
 *      least to most specific: more literal (non-`*`) characters wins; on a tie fewer `*`; then the
 *      block later in the file.
 *
 * `[tools] allow` is one value like any other: a more specific place replaces the whole list. Its
 * patterns must name built-in tools or servers of `[mcp.servers]` (`tool-rules.ts`).
 *
 * Cross-field rules (`0 < background < aggressive < emergency <= 1`,
 * `context_window > max_output_tokens + summary_max_tokens + recall_max_tokens`,
 * `message_max_tokens < context_window - max_output_tokens`) run at load on the sections alone, on each
 * platform section, and on each pattern block merged over everything that applies to all its keys.
 */
export { DEFAULTS_CHANNEL_KEY } from './channel-layers.js';
export {
  type CompactionOverride,
  channelCompactionBlock,
  channelCompactionToml,
  withChannelCompaction,
} from './channel-override.js';
export { comparePatterns, patternMatches, patternSubsumes } from './channel-pattern.js';
export {
  CONFIG_ERROR_CODES,
  ConfigError,
  type ConfigErrorCode,
  type ConfigIssue,
  formatConfigIssue,
} from './config-error.js';
export {
  configFileSchema,
  DEFAULT_CONTEXT_CACHE_MB,
  type DiscordSection,
  type McpServerSection,
  type Price,
  SECTIONS,
  type Section,
  type Settings,
  type SettingsLayer,
  type SlackSection,
  type WebSection,
} from './config-schema.js';
export {
  ConfigWatcher,
  type ConfigWatcherOptions,
  changedSettings,
  type ReloadOutcome,
} from './config-watcher.js';
export { checkChannel, type PromptMeasure } from './cross-field-rules.js';
export type { DeepReadonly } from './deep-freeze.js';
export type { ChannelBlock, EbbConfig } from './ebb-config.js';
export { DEFAULT_REDIS_URL, type EbbEnv, ENV_NAMES, loadEnv } from './env.js';
export { DEFAULT_CONFIG_FILE, type LoadConfigOptions, loadConfig } from './load-config.js';
export { envReferences, mcpServerSpecs, type ResolvedMcpServer } from './mcp-server-specs.js';
export {
  BUILT_IN_DEFAULTS,
  DERIVED_DEFAULTS,
  type EffectiveSettings,
  LEAF_KEYS,
  type LeafKey,
} from './merge-settings.js';
export { parseConfig } from './parse-config.js';
export {
  type ChannelExplanation,
  type ExplainedSetting,
  explainChannel,
  type ResolvedChannelConfig,
  resolveChannel,
  retentionConfigured,
} from './resolve-channel.js';
export { formatTomlPath, formatTomlValue } from './toml-path.js';
export { allowPatternsOf } from './tool-rules.js';
