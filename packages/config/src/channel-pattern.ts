/**
 * Channel-key globs for `[channels."<pattern>"]`. `*` matches any run of characters, `:` included,
 * so `slack:T1:C1*` covers the channel `slack:T1:C1` and all its threads `slack:T1:C1:<thread_ts>`.
 * Every other character is literal.
 */

import { LruMap } from '@ebb/core';

/** Compiled patterns: those of config.toml, and the globs the CLI is given. */
const regexpCache = new LruMap<string, RegExp>(1_000);

function compile(pattern: string): RegExp {
  return regexpCache.getOrSet(pattern, () => {
    const body = pattern
      .split('*')
      .map((literal) => literal.replace(/[\\^$.|?+()[\]{}]/g, '\\$&'))
      .join('[\\s\\S]*');
    return new RegExp(`^${body}$`);
  });
}

/** Whether `pattern` matches the whole of `channelKey`. */
export function patternMatches(pattern: string, channelKey: string): boolean {
  return compile(pattern).test(channelKey);
}

/**
 * Whether every key `specific` matches is also matched by `general`. For `*`-only globs this holds
 * exactly when `general` matches `specific` with each `*` of `specific` read as a character that only a
 * `*` of `general` can cover.
 */
export function patternSubsumes(general: string, specific: string): boolean {
  return compile(general).test(specific.replaceAll('*', '\u0000'));
}

export interface PatternRank {
  readonly pattern: string;
  /** Position of the block in the file. */
  readonly index: number;
}

/**
 * Orders pattern blocks from least to most specific: fewer literal (non-`*`) characters first; on a
 * tie, more `*` runs first; then earlier in the file first. Applying blocks in this order lets the most
 * specific one win.
 */
export function comparePatterns(a: PatternRank, b: PatternRank): number {
  return (
    literalCount(a.pattern) - literalCount(b.pattern) ||
    starCount(b.pattern) - starCount(a.pattern) ||
    a.index - b.index
  );
}

function literalCount(pattern: string): number {
  return pattern.replaceAll('*', '').length;
}

function starCount(pattern: string): number {
  return pattern.match(/\*+/g)?.length ?? 0;
}
