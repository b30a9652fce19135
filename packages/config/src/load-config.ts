import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from './config-error.js';
import type { EbbConfig } from './ebb-config.js';
import { parseConfigText } from './parse-config.js';

/** Looked for in the working directory when no path is given. */
export const DEFAULT_CONFIG_FILE = 'config.toml';

export interface LoadConfigOptions {
  /** An explicit path (`ebb --config PATH`); wins over `EBB_CONFIG`. Must exist. */
  readonly path?: string;
  /** Relative paths resolve against it; defaults to `process.cwd()`. */
  readonly cwd?: string;
  /** Defaults to `process.env`; only `EBB_CONFIG` (a config path, must exist) is read. */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Reads, parses and validates the config: `options.path`, else `EBB_CONFIG`, else `./config.toml`.
 * A path given either way must exist; a missing `./config.toml` means built-in defaults
 * (`file: null`). Throws one `ConfigError` listing every problem.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<EbbConfig> {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const fromEnv = env.EBB_CONFIG === '' ? undefined : env.EBB_CONFIG;
  const given = options.path ?? fromEnv;
  const file = path.resolve(cwd, given ?? DEFAULT_CONFIG_FILE);
  const label = displayPath(cwd, file);

  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && given === undefined)
      return parseConfigText('', { file: null, label: 'built-in defaults' });
    const origin = options.path === undefined ? ' (from EBB_CONFIG)' : '';
    const rule =
      code === 'ENOENT'
        ? `config file not found${origin}; looked for ${file}`
        : `config file cannot be read${origin}: ${(error as Error).message}`;
    throw new ConfigError([{ file: label, path: '', rule, found: file }], {
      code: code === 'ENOENT' ? 'config_not_found' : 'config_unreadable',
      cause: error,
    });
  }
  return parseConfigText(text, { file, label });
}

/** Relative to `cwd` when the file is inside it, absolute otherwise. */
function displayPath(cwd: string, file: string): string {
  const relative = path.relative(cwd, file);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}
