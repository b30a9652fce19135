/**
 * Ebb's logger: pino, JSON lines, one `event` field per compaction step. Secrets never reach the
 * output: known secret keys are redacted wherever they appear, and passwords inside connection URLs
 * are masked. Message text is logged only at debug level, by the callers' choice of level.
 */
import { type DestinationStream, type Logger as PinoLogger, pino } from 'pino';

/** The port every package logs through; a pino logger is one (see `createLogger`). */
export type { Logger } from '@ebb/core';

/** Keys whose values are secrets, at any of the first two levels of a log line. */
const SECRET_KEYS = [
  'apiKey',
  'api_key',
  'token',
  'botToken',
  'appToken',
  'signingSecret',
  'password',
  'authorization',
  'Authorization',
  'secret',
  'adminToken',
  'metricsToken',
  'cookie',
];

export interface LoggerOptions {
  readonly level?: string;
  /** Human-readable output for a terminal (pino-pretty); JSON otherwise. */
  readonly pretty?: boolean;
  readonly name?: string;
  /** Where lines go (tests capture them); stdout by default. */
  readonly destination?: DestinationStream;
}

/**
 * A pino logger, typed as pino's own; it satisfies the `Logger` port (checked in
 * `create-logger.test.ts`), so every package can be given it.
 */
export function createLogger(options: LoggerOptions = {}): PinoLogger {
  const base = {
    level: options.level ?? 'info',
    ...(options.name === undefined ? {} : { name: options.name }),
    redact: { paths: [...SECRET_KEYS, ...SECRET_KEYS.map((k) => `*.${k}`)], censor: '[redacted]' },
    formatters: { log: maskUrls },
  };
  if (options.destination) return pino(base, options.destination);
  if (options.pretty)
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true } } });
  return pino(base);
}

const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)([^@\s]+)(@)/gi;

/** Masks `user:password@` in every string value of a log line (database and Redis URLs). */
export function maskUrls(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    out[key] = typeof value === 'string' ? value.replace(URL_PASSWORD, '$1[redacted]$3') : value;
  }
  return out;
}
