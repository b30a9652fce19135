/**
 * A `Logger` that keeps its lines, for tests that wait for a log line or check its fields. Children
 * write to the same list, with their bindings merged into each line's fields (as pino does).
 */
import type { LogBindings, LogFn, Logger } from '../support/logger.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export interface LogEntry {
  readonly level: LogLevel;
  /** The child bindings, then the line's own fields. */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly message: string | undefined;
}

export class RecordingLogger implements Logger {
  readonly entries: LogEntry[];
  readonly #bindings: LogBindings;

  constructor(entries: LogEntry[] = [], bindings: LogBindings = {}) {
    this.entries = entries;
    this.#bindings = bindings;
  }

  readonly debug = this.#at('debug');
  readonly info = this.#at('info');
  readonly warn = this.#at('warn');
  readonly error = this.#at('error');
  readonly fatal = this.#at('fatal');

  child(bindings: LogBindings): RecordingLogger {
    return new RecordingLogger(this.entries, { ...this.#bindings, ...bindings });
  }

  /** The lines whose `event` is `name`. */
  events(name: string): LogEntry[] {
    return this.entries.filter((e) => e.fields.event === name);
  }

  #at(level: LogLevel): LogFn {
    return (fieldsOrMessage: object | string, message?: string): void => {
      const own = typeof fieldsOrMessage === 'string' ? {} : fieldsOrMessage;
      this.entries.push({
        level,
        fields: { ...this.#bindings, ...own },
        message: typeof fieldsOrMessage === 'string' ? fieldsOrMessage : message,
      });
    };
  }
}
