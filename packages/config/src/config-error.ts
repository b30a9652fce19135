import { EbbError } from '@ebb/core';
import { formatTomlValue } from './toml-path.js';

/** One problem in a config file. */
export interface ConfigIssue {
  /** The file as the operator named it (`config.toml`, `/etc/ebb/config.toml`). */
  readonly file: string;
  /** The TOML path of the offending key (`channels."slack:T1:*".compaction.background_threshold`); empty for the whole file. */
  readonly path: string;
  /** What was expected, as a sentence fragment (`must be below aggressive_threshold (0.85, default)`). */
  readonly rule: string;
  /** The value found at `path` (undefined when the key is missing). */
  readonly found: unknown;
  /** Set for TOML syntax errors: where the parser stopped (1-based). */
  readonly line?: number;
  readonly column?: number;
  /** Set for TOML syntax errors: the lines around the error with a caret under it. */
  readonly excerpt?: string;
}

export const CONFIG_ERROR_CODES = ['config_invalid', 'config_not_found', 'config_unreadable'] as const;
export type ConfigErrorCode = (typeof CONFIG_ERROR_CODES)[number];

/**
 * A config file that cannot be used. Carries every problem found, not just the first, and its message
 * is the report an operator reads: one line per problem, naming the file, the TOML path, the rule and
 * the value found.
 */
export class ConfigError extends EbbError<ConfigErrorCode> {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[], options: { code?: ConfigErrorCode; cause?: unknown } = {}) {
    super(formatConfigIssues(issues), { code: options.code ?? 'config_invalid', cause: options.cause });
    this.issues = Object.freeze([...issues]);
  }
}

/** `config.toml: compaction.background_fraction: must be between 0 and 1 (exclusive); found 1.5` */
export function formatConfigIssue(issue: ConfigIssue): string {
  if (issue.line !== undefined) {
    const where = `${issue.file}:${issue.line}:${issue.column ?? 1}`;
    const excerpt = issue.excerpt?.trimEnd();
    const indented = excerpt ? `\n${excerpt.replace(/^/gm, '    ')}` : '';
    return `${where}: ${issue.rule}${indented}`;
  }
  if (issue.path === '') return `${issue.file}: ${issue.rule}`;
  const found = issue.rule.startsWith('unknown key') ? '' : `; found ${formatTomlValue(issue.found)}`;
  return `${issue.file}: ${issue.path}: ${issue.rule}${found}`;
}

export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  return issues.map(formatConfigIssue).join('\n');
}
