/**
 * Which places of the file apply to a channel, in precedence order (built-in defaults come before all
 * of them and are not listed): the top-level sections, the channel's platform section, then every
 * matching `[channels."<pattern>"]` block from least to most specific.
 */
import { type Platform, platformOf } from '@ebb/core';
import { comparePatterns, patternMatches, patternSubsumes } from './channel-pattern.js';
import type { Section, SettingsLayer } from './config-schema.js';
import type { DeepReadonly } from './deep-freeze.js';
import { type EbbConfig, settingsLayerOf } from './ebb-config.js';
import { formatTomlKey, formatTomlPath } from './toml-path.js';

export type LayerSource =
  | { readonly kind: 'sections' }
  | { readonly kind: 'platform'; readonly platform: Platform }
  | { readonly kind: 'channel'; readonly pattern: string };

export interface Layer {
  readonly source: LayerSource;
  readonly settings: DeepReadonly<SettingsLayer>;
}

/** The key that resolves to the top-level sections alone: no platform section, no pattern block. */
export const DEFAULTS_CHANNEL_KEY = 'defaults';

/** How a source is named to the operator: `[compaction]`, `[slack]`, `[channels."slack:*"]`. */
export function layerLabel(source: LayerSource | undefined, section: Section): string {
  switch (source?.kind) {
    case undefined:
      return 'default';
    case 'sections':
      return `[${section}]`;
    case 'platform':
      return `[${source.platform}]`;
    case 'channel':
      return `[channels.${formatTomlKey(source.pattern)}]`;
  }
}

/** Where in the file a leaf of this source is written. */
export function layerLeafPath(source: LayerSource | undefined, section: Section, key: string): string {
  switch (source?.kind) {
    case undefined:
    case 'sections':
      return formatTomlPath([section, key]);
    case 'platform':
      return formatTomlPath([source.platform, section, key]);
    case 'channel':
      return formatTomlPath(['channels', source.pattern, section, key]);
  }
}

function sectionsLayer(config: EbbConfig): Layer {
  return { source: { kind: 'sections' }, settings: config.sections };
}

function platformLayer(config: EbbConfig, platform: Platform): Layer {
  return { source: { kind: 'platform', platform }, settings: settingsLayerOf(config[platform]) };
}

function channelLayer(config: EbbConfig, index: number): Layer {
  const block = config.channels[index];
  if (block === undefined) throw new RangeError(`no channel block at ${index}`);
  return { source: { kind: 'channel', pattern: block.pattern }, settings: block };
}

function ranked(config: EbbConfig) {
  return config.channels.map((block, index) => ({ pattern: block.pattern, index })).sort(comparePatterns);
}

/** The layers that apply to `channelKey`, least to most specific. */
export function layersForKey(config: EbbConfig, channelKey: string): Layer[] {
  const layers = [sectionsLayer(config)];
  if (channelKey === DEFAULTS_CHANNEL_KEY) return layers;
  const platform = platformOf(channelKey);
  if (platform !== undefined) layers.push(platformLayer(config, platform));
  for (const { pattern, index } of ranked(config)) {
    if (patternMatches(pattern, channelKey)) layers.push(channelLayer(config, index));
  }
  return layers;
}

/** The layers of a platform section on its own: what every channel of that platform starts from. */
export function layersForPlatform(config: EbbConfig, platform: Platform): Layer[] {
  return [sectionsLayer(config), platformLayer(config, platform)];
}

/**
 * The layers every key a pattern block matches is guaranteed to get, ending with the block itself:
 * the sections, the platform section its prefix names, and each less specific block whose glob covers
 * every key this one matches (`slack:*` covers `slack:T1:*`). Blocks that overlap it only partly
 * (`slack:*:C1` and `slack:T1:*` share `slack:T1:C1`) are not combined here; `checkChannel` checks
 * such a combination for one concrete key.
 */
export function layersForBlock(config: EbbConfig, blockIndex: number): Layer[] {
  const block = config.channels[blockIndex];
  if (block === undefined) throw new RangeError(`no channel block at ${blockIndex}`);
  const layers = [sectionsLayer(config)];
  const platform = platformOf(block.pattern);
  if (platform !== undefined) layers.push(platformLayer(config, platform));
  const order = ranked(config);
  const position = order.findIndex((entry) => entry.index === blockIndex);
  for (const { pattern, index } of order.slice(0, position)) {
    if (patternSubsumes(pattern, block.pattern)) layers.push(channelLayer(config, index));
  }
  layers.push(channelLayer(config, blockIndex));
  return layers;
}

/** Blocks in the order their validation contexts run: least specific first. */
export function blockIndicesBySpecificity(config: EbbConfig): number[] {
  return ranked(config).map((entry) => entry.index);
}

/** A stable name for a source, used to match schema problems and repeated rule violations. */
export function layerId(source: LayerSource): string {
  switch (source.kind) {
    case 'sections':
      return 'sections';
    case 'platform':
      return source.platform;
    case 'channel':
      return `channels:${source.pattern}`;
  }
}
