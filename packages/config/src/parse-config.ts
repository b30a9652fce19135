import { parse, TomlError } from 'smol-toml';
import { ConfigError } from './config-error.js';
import { checkConfigRules } from './cross-field-rules.js';
import { deepFreeze } from './deep-freeze.js';
import { type EbbConfig, toEbbConfig } from './ebb-config.js';
import { checkSchema } from './schema-issues.js';
import { checkToolRules } from './tool-rules.js';

/**
 * Parses and validates the text of a `config.toml`. `file` names the file in error messages and is
 * kept as `EbbConfig.file`. Throws one `ConfigError` listing every problem.
 */
export function parseConfig(text: string, file: string): EbbConfig {
  return parseConfigText(text, { file, label: file });
}

/** As `parseConfig`, with the file kept (`file`) apart from how messages name it (`label`). */
export function parseConfigText(text: string, source: { file: string | null; label: string }): EbbConfig {
  const { file, label } = source;
  let raw: Record<string, unknown>;
  try {
    raw = parse(text, { unsafeKeyBehaviour: 'throw' });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const reason = error.message.split('\n')[0]?.replace(/^Invalid TOML document: /, '') ?? error.message;
    throw new ConfigError(
      [
        {
          file: label,
          path: '',
          rule: `invalid TOML: ${reason}`,
          found: text.split(/\r?\n/)[error.line - 1],
          line: error.line,
          column: error.column,
          excerpt: error.codeblock,
        },
      ],
      { cause: error },
    );
  }

  const { issues, data, tainted } = checkSchema(raw, label);
  const config = data === undefined ? undefined : toEbbConfig(data, file);
  const ruleIssues =
    config === undefined
      ? []
      : [...checkConfigRules(config, label, tainted), ...checkToolRules(config, label)];
  if (issues.length > 0 || ruleIssues.length > 0) throw new ConfigError([...issues, ...ruleIssues]);
  if (config === undefined)
    throw new ConfigError([{ file: label, path: '', rule: 'cannot be read', found: raw }]);
  return deepFreeze(config);
}
