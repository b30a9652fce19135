import {
  type ConfigFile,
  DEFAULT_CONTEXT_CACHE_MB,
  type DiscordSection,
  type McpSection,
  type Price,
  SECTIONS,
  type SettingsLayer,
  type ShutdownSection,
  type SlackSection,
  type WebSection,
} from './config-schema.js';
import type { DeepReadonly } from './deep-freeze.js';

/** One `[channels."<pattern>"]` block: its glob and the sections it overrides. */
export type ChannelBlock = { readonly pattern: string } & DeepReadonly<SettingsLayer>;

/**
 * A validated `config.toml`, deeply frozen, keeping each place of the file apart so any channel can be
 * resolved later with `resolveChannel`. Keys are the file's snake_case ones.
 */
export interface EbbConfig {
  /** Absolute path of the file read, or null when built-in defaults are in use. */
  readonly file: string | null;
  /** `[llm]`, `[compaction]`, `[memory]`, `[bot]`, `[tools]` as written (absent keys fall back to defaults). */
  readonly sections: DeepReadonly<SettingsLayer>;
  /** `[prices."<model>"]`, USD per million tokens. */
  readonly prices: DeepReadonly<Record<string, Price>>;
  /** Platform sections with their defaults filled in; their `llm`/`compaction`/`memory`/`bot` sub-tables as written. */
  readonly slack: DeepReadonly<SlackSection>;
  readonly discord: DeepReadonly<DiscordSection>;
  readonly web: DeepReadonly<WebSection>;
  readonly shutdown: DeepReadonly<ShutdownSection>;
  /** Settings of the whole bot process, from the top-level `[bot]` (see `PROCESS_KEYS`). */
  readonly process: {
    /** `[bot] context_cache_mb`: the working contexts the bot keeps in memory, in MiB. */
    readonly contextCacheMb: number;
  };
  /** `[mcp.servers.NAME]`: the MCP servers whose tools channels may be allowed. */
  readonly mcp: DeepReadonly<McpSection>;
  /** `[channels."<pattern>"]` blocks in file order. */
  readonly channels: readonly ChannelBlock[];
}

/** Only the overridable sections of a table, without keys for the absent ones. */
export function settingsLayerOf(table: SettingsLayer): SettingsLayer {
  const layer: SettingsLayer = {};
  for (const section of SECTIONS) {
    const value = table[section];
    if (value !== undefined) Object.assign(layer, { [section]: value });
  }
  return layer;
}

export function toEbbConfig(data: ConfigFile, file: string | null): EbbConfig {
  const { context_cache_mb: contextCacheMb = DEFAULT_CONTEXT_CACHE_MB, ...bot } = data.bot ?? {};
  return {
    file,
    sections: settingsLayerOf({ ...data, ...(data.bot === undefined ? {} : { bot }) }),
    process: { contextCacheMb },
    prices: data.prices,
    slack: data.slack,
    discord: data.discord,
    web: data.web,
    shutdown: data.shutdown,
    mcp: data.mcp,
    channels: Object.entries(data.channels).map(([pattern, block]) => ({
      pattern,
      ...settingsLayerOf(block),
    })),
  };
}
