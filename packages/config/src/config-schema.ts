/**
 * The zod schema of `config.toml`. Every table is a `z.strictObject`, so a misspelt key fails instead
 * of being ignored, and the built-in defaults live in it, on the leaves of `settingsSchema` (written
 * in `channel-sections.ts`).
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
 *
 * This file assembles the whole file's schema from its parts (and re-exports them):
 *
 * - `schema-leaves.ts`: the leaf checks and their `must be …` messages.
 * - `channel-sections.ts`: the six overridable sections, their keys and defaults.
 * - `settings-schema.ts`: those sections with defaults (`settingsSchema`) and as a layer
 *   (`settingsLayerSchema`), and the top-level `[bot]` with its process keys.
 * - `platform-sections.ts`: `[slack]`, `[discord]` and `[web]`, each also a layer.
 * - `top-level-sections.ts`: the tables only the top level has: `[prices]`, `[shutdown]`, `[mcp]`.
 */
import { z } from 'zod';
import { discordSchema, slackSchema, webSchema } from './platform-sections.js';
import { modelName, TABLE, text } from './schema-leaves.js';
import { layerShape, settingsLayerSchema, topBotSchema } from './settings-schema.js';
import { mcpSchema, priceSchema, shutdownSchema } from './top-level-sections.js';

export * from './channel-sections.js';
export * from './platform-sections.js';
export {
  DEFAULT_CONTEXT_CACHE_MB,
  PROCESS_KEYS,
  SECTION_KEYS,
  SECTIONS,
  type Section,
  type Settings,
  type SettingsLayer,
  settingsLayerSchema,
  settingsSchema,
} from './settings-schema.js';
export * from './top-level-sections.js';

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
