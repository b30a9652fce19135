/**
 * The overridable sections (`channel-sections.ts`) in their two forms: `settingsSchema` carries the
 * defaults (it yields `BUILT_IN_DEFAULTS`), `settingsLayerSchema` has the same leaves without them and
 * parses every place of the file that may set them, so a layer holds only what the operator wrote.
 * Also the top-level `[bot]`, the one layer that takes process keys too (`PROCESS_KEYS`).
 */
import { z } from 'zod';
import {
  botSchema,
  budgetSchema,
  compactionSchema,
  llmSchema,
  memorySchema,
  privacySchema,
  toolsSchema,
} from './channel-sections.js';
import { positiveInt, TABLE } from './schema-leaves.js';

export const SECTIONS = ['llm', 'compaction', 'memory', 'bot', 'tools', 'privacy', 'budget'] as const;
export type Section = (typeof SECTIONS)[number];

/** The seven overridable sections with every default filled in. */
export const settingsSchema = z.strictObject({
  llm: llmSchema.prefault({}),
  compaction: compactionSchema.prefault({}),
  memory: memorySchema.prefault({}),
  bot: botSchema.prefault({}),
  tools: toolsSchema.prefault({}),
  privacy: privacySchema.prefault({}),
  budget: budgetSchema.prefault({}),
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
export const topBotSchema = z.strictObject(
  { ...optionalShape(botSchema), context_cache_mb: positiveInt().optional() },
  TABLE,
) as unknown as z.ZodType<Partial<z.output<typeof botSchema>> & { context_cache_mb?: number }>;
export const DEFAULT_CONTEXT_CACHE_MB = 512;

export const layerShape = {
  llm: overridable(llmSchema).optional(),
  compaction: overridable(compactionSchema).optional(),
  memory: overridable(memorySchema).optional(),
  bot: overridable(botSchema).optional(),
  tools: overridable(toolsSchema).optional(),
  privacy: overridable(privacySchema).optional(),
  budget: overridable(budgetSchema).optional(),
};

/** What one place in the file sets of the overridable sections; absent keys are inherited. */
export const settingsLayerSchema = z.strictObject(layerShape, TABLE);
export type SettingsLayer = z.output<typeof settingsLayerSchema>;

/** The TOML keys of each overridable section, in schema order. */
export const SECTION_KEYS: { readonly [S in Section]: readonly (keyof Settings[S] & string)[] } = {
  llm: Object.keys(llmSchema.shape) as (keyof Settings['llm'] & string)[],
  compaction: Object.keys(compactionSchema.shape) as (keyof Settings['compaction'] & string)[],
  memory: Object.keys(memorySchema.shape) as (keyof Settings['memory'] & string)[],
  bot: Object.keys(botSchema.shape) as (keyof Settings['bot'] & string)[],
  tools: Object.keys(toolsSchema.shape) as (keyof Settings['tools'] & string)[],
  privacy: Object.keys(privacySchema.shape) as (keyof Settings['privacy'] & string)[],
  budget: Object.keys(budgetSchema.shape) as (keyof Settings['budget'] & string)[],
};
