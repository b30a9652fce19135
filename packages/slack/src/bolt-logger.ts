/**
 * A bridge that gives Bolt, its `WebClient` and its Socket Mode client the adapter's destination:
 * Ebb's `Logger` port.
 */
import type { Logger } from '@ebb/core';
import { type Logger as BoltLogger, LogLevel } from '@slack/bolt';

type Level = 'debug' | 'info' | 'warn' | 'error';

/**
 * A Bolt `Logger` writing to `log` as `slack.library_logged` with `component: 'bolt'` (or the name
 * Bolt sets). Bolt's own level setting is kept for the calls that ask for it; filtering is left to
 * `log`.
 */
export function boltLogger(log: Logger): BoltLogger {
  let level: LogLevel = LogLevel.INFO;
  let name = 'bolt';
  const emit = (at: Level, args: readonly unknown[]): void => {
    const err = args.find((a) => a instanceof Error);
    const text = args
      .filter((a) => !(a instanceof Error))
      .map((a) => (typeof a === 'string' ? a : safeJson(a)))
      .join(' ');
    log[at](
      { event: 'slack.library_logged', component: name, ...(err ? { err } : {}) },
      text || (err instanceof Error ? err.message : ''),
    );
  };
  return {
    debug: (...args: unknown[]) => emit('debug', args),
    info: (...args: unknown[]) => emit('info', args),
    warn: (...args: unknown[]) => emit('warn', args),
    error: (...args: unknown[]) => emit('error', args),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: (next: string) => {
      name = next;
    },
  };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
