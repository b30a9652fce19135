/**
 * Hot reload. The running config is replaced when config.toml changes on disk (file watch) or on
 * `reload()` (SIGHUP): a valid file takes effect for the next turn of every channel and is reported
 * with the settings that changed; an invalid one is rejected with the full report and the old config
 * stays. Nothing restarts.
 */
import { type FSWatcher, watch } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config-error.js';
import type { EbbConfig } from './ebb-config.js';
import { loadConfig } from './load-config.js';

export type ReloadOutcome =
  | { readonly kind: 'reloaded'; readonly changed: readonly string[] }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'rejected'; readonly error: ConfigError };

export interface ConfigWatcherOptions {
  /** The file the running config came from (`EbbConfig.file`). */
  readonly file: string;
  readonly initial: EbbConfig;
  /** Called after every reload attempt, from the watch or from `reload()`. */
  readonly onReload?: (outcome: ReloadOutcome) => void;
  /** Editors write files in several steps: wait this long after the last change (ms). */
  readonly debounceMs?: number;
}

export class ConfigWatcher {
  readonly #options: ConfigWatcherOptions;
  #current: EbbConfig;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #reloading: Promise<ReloadOutcome> = Promise.resolve({ kind: 'unchanged' });

  constructor(options: ConfigWatcherOptions) {
    this.#options = options;
    this.#current = options.initial;
  }

  /** The config in force now; read it per turn, never keep it. */
  current(): EbbConfig {
    return this.#current;
  }

  /**
   * Watches the file's folder: editors often replace the file rather than write it in place, and a
   * Kubernetes ConfigMap volume never touches `config.toml` at all (a link to `..data/config.toml`):
   * the kubelet writes a new `..<timestamp>` folder and renames a `..data_tmp` link over `..data`.
   * So a change of the file's own name or of a `..` name reloads; a reload that finds the same
   * settings changes nothing and says nothing.
   */
  start(): void {
    const file = path.resolve(this.#options.file);
    this.#watcher = watch(path.dirname(file), (_event, name) => {
      if (name !== null && name !== path.basename(file) && !name.startsWith('..')) return;
      clearTimeout(this.#timer);
      this.#timer = setTimeout(() => void this.reload(), this.#options.debounceMs ?? 100);
    });
  }

  /** Reads the file again; reloads run one at a time. */
  reload(): Promise<ReloadOutcome> {
    this.#reloading = this.#reloading.then(() => this.#reload());
    return this.#reloading;
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#watcher?.close();
  }

  async #reload(): Promise<ReloadOutcome> {
    let outcome: ReloadOutcome;
    try {
      const next = await loadConfig({ path: this.#options.file });
      const changed = changedSettings(this.#current, next);
      if (changed.length > 0) this.#current = next;
      outcome = changed.length > 0 ? { kind: 'reloaded', changed } : { kind: 'unchanged' };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      outcome = { kind: 'rejected', error: err };
    }
    this.#options.onReload?.(outcome);
    return outcome;
  }
}

/** The TOML-ish paths whose values differ between two configs (`compaction.background_threshold`, `channels."slack:*".compaction…`). */
export function changedSettings(before: EbbConfig, after: EbbConfig): string[] {
  const a = flatten({ ...before, file: undefined });
  const b = flatten({ ...after, file: undefined });
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys].filter((k) => a.get(k) !== b.get(k)).sort();
}

function flatten(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix === '' ? k : `${prefix}.${k}`, out);
  } else if (value !== undefined) {
    out.set(prefix, JSON.stringify(value));
  }
  return out;
}
