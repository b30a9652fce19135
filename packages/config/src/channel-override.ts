/**
 * A config with one channel's compaction settings changed, as the operator would get by pasting a
 * `[channels."KEY".compaction]` block into the file (replacing that block, if the file has one):
 * the file's TOML with the keys set, through the same parse and validation as any `config.toml`.
 * `ebb simulate --suggest` checks each candidate with it, so it never proposes what `ebb config check`
 * refuses.
 */
import { parse, stringify } from 'smol-toml';
import type { EbbConfig } from './ebb-config.js';
import { parseConfigText } from './parse-config.js';

/** Compaction keys as the file writes them (`background_threshold`), and their values. */
export type CompactionOverride = Readonly<Record<string, number | boolean | string>>;

/**
 * `text` (the file's contents, `''` for built-in defaults) with `[channels."<key>".compaction]` set to
 * the block it has merged with `values`. Throws `ConfigError` when the result is not a valid config.
 */
export function withChannelCompaction(
  text: string,
  label: string,
  channelKey: string,
  values: CompactionOverride,
): EbbConfig {
  return parseConfigText(channelCompactionToml(text, channelKey, values), { file: null, label });
}

/** The TOML text `withChannelCompaction` parses. */
export function channelCompactionToml(text: string, channelKey: string, values: CompactionOverride): string {
  const raw = parse(text, { unsafeKeyBehaviour: 'throw' }) as Record<string, unknown>;
  const block = table(table(raw, 'channels'), channelKey);
  block.compaction = { ...table(block, 'compaction'), ...values };
  return stringify(raw);
}

/**
 * `[channels."KEY".compaction]` as `withChannelCompaction` sets it: the keys the file's block has,
 * `values` over them, as TOML text ready to paste in place of that block (nothing of it is lost).
 */
export function channelCompactionBlock(text: string, channelKey: string, values: CompactionOverride): string {
  const raw = parse(text, { unsafeKeyBehaviour: 'throw' }) as Record<string, unknown>;
  const merged = { ...table(table(table(raw, 'channels'), channelKey), 'compaction'), ...values };
  return stringify({ channels: { [channelKey]: { compaction: merged } } }).trim();
}

/** The table at `key` (created when absent). */
function table(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  const value = Object.hasOwn(parent, key) ? parent[key] : undefined;
  if (typeof value === 'object' && value !== null && !Array.isArray(value))
    return value as Record<string, unknown>;
  const created: Record<string, unknown> = {};
  parent[key] = created;
  return created;
}
