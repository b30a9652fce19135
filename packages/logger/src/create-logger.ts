/**
 * Ebb's logger: pino, JSON lines, one `event` field per compaction step. Secrets never reach the
 * output: known secret keys are redacted wherever they appear, and passwords inside connection URLs
 * are masked. Message text is logged only at debug level, by the callers' choice of level. A line
 * written while a span is active carries its `trace_id` and `span_id`, so it leads to its trace.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
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
    mixin: traceIds,
    mixinMergeStrategy: withTraceIds,
  };
  if (options.destination) return pino(base, options.destination);
  if (options.pretty)
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true } } });
  return pino(base);
}

const NO_IDS: Record<string, string> = Object.freeze({});

/**
 * The active span's ids, as OpenTelemetry's log data model names them. With tracing off there is no
 * active span (the API's context lookup is a no-op), so a line costs one lookup and gets nothing.
 */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (span === undefined) return NO_IDS;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : NO_IDS;
}

/**
 * The line's fields over the ids. pino's own strategy assigns the fields onto the mixin's object,
 * which must then be new for every line; a line without ids is left as it is, so tracing off
 * allocates nothing.
 */
function withTraceIds(fields: object, ids: object): object {
  return ids === NO_IDS ? fields : Object.assign(ids, fields);
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
