/**
 * Errors from pg, PGlite and drizzle become `EbbError`s here, at the edge: a caller (the worker's
 * retry, the bot's reply path) sees a stable `code` and whether trying again can help.
 *
 * | code | when | retryable |
 * | --- | --- | --- |
 * | `db_unavailable` | no connection, connection lost, server shutting down or out of connections | yes |
 * | `db_conflict` | serialization failure, deadlock | yes |
 * | `db_timeout` | statement cancelled, lock not available | yes |
 * | `db_constraint` | a constraint refused the write (a bug: stores write only valid rows) | no |
 * | `db_schema` | a table or column is missing: migrations were not applied | no |
 * | `db_error` | anything else | no |
 * | `invalid_channel_key` | a key with no known platform prefix (`rows.ts`) | no |
 */
import { COMMON_ERROR_CODES, EbbError, type ErrorContext } from '@ebb/core';

export const DB_ERROR_CODES = [
  ...COMMON_ERROR_CODES,
  'db_unavailable',
  'db_conflict',
  'db_timeout',
  'db_constraint',
  'db_schema',
  /** The embedded database is open in another live process (`embedded-lock.ts`). */
  'db_locked',
  'db_error',
] as const;
export type DbErrorCode = (typeof DB_ERROR_CODES)[number];

/** An error from the stores, with one of `DB_ERROR_CODES`. */
export class DbError extends EbbError<DbErrorCode> {}

const SQLSTATE = /^[0-9A-Z]{5}$/;

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Cannot use a pool after calling end',
  'Client was closed',
  'PGlite is closed',
];

/** Runs one store operation, mapping what it throws. */
export async function dbCall<T>(operation: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toEbbError(err, { doing: operation });
  }
}

/** Maps what pg, PGlite or drizzle threw; `doing` is the store operation (`append`, `splice`). */
export function toEbbError(err: unknown, context: ErrorContext<DbErrorCode>): EbbError {
  if (err instanceof EbbError) return err;
  const chain = causes(err);
  const sqlstate = chain.map((e) => (typeof e.code === 'string' ? e.code : '')).find((c) => SQLSTATE.test(c));
  // The driver's message, not drizzle's wrapper (which quotes the query and its parameters).
  const source = chain.find((e) => typeof e.code === 'string') ?? chain.at(-1);
  const detail = describeThrown(source ?? err);
  const { code, retryable } = sqlstate ? classify(sqlstate) : classifyDriver(chain);
  const suffix = sqlstate ? ` (SQLSTATE ${sqlstate})` : '';
  return new DbError(`${context.doing} failed: ${detail}${suffix}`, {
    code: context.code ?? code,
    retryable,
    cause: driverCause(source, detail),
  });
}

/**
 * What was thrown, in words: its message, or, for what has none (PGlite's file system throws plain
 * `ErrnoError` objects), its name and its number and boolean fields, never `[object Object]`.
 */
export function describeThrown(thrown: unknown): string {
  if (typeof thrown !== 'object' || thrown === null) return String(thrown);
  const { message, name, errno } = thrown as { message?: unknown; name?: unknown; errno?: unknown };
  if (typeof message === 'string' && message !== '') return message;
  const fields = Object.entries(thrown).filter(
    ([key, value]) => typeof value === 'number' || typeof value === 'boolean' || key === 'code',
  );
  const label = typeof name === 'string' && name !== '' ? name : (thrown.constructor?.name ?? 'object');
  const known = typeof errno === 'number' ? WASI_ERRNO[errno] : undefined;
  return `${label} ${JSON.stringify(Object.fromEntries(fields))}${known ? ` (${known})` : ''}`;
}

/** The errno numbers of PGlite's emscripten file system (WASI's) that a data directory meets. */
const WASI_ERRNO: Readonly<Record<number, string>> = {
  2: 'EACCES: permission denied',
  20: 'EEXIST: file exists',
  29: 'EIO: i/o error',
  44: 'ENOENT: no such file or directory',
  51: 'ENOSPC: no space left on device',
  54: 'ENOTDIR: not a directory',
  55: 'ENOTEMPTY: directory not empty',
  69: 'EROFS: read-only file system',
};

/**
 * The driver's error without the query parameters that drizzle and PGlite attach (they hold message
 * text, which is only logged at debug level).
 */
function driverCause(source: ErrorLike | undefined, message: string): Error {
  const cause = new Error(message);
  if (source === undefined) return cause;
  const src = source as ErrorLike & Record<string, unknown>;
  if (typeof src.name === 'string') cause.name = src.name;
  if (typeof src.stack === 'string') cause.stack = src.stack;
  for (const field of DRIVER_FIELDS)
    if (src[field] !== undefined) Object.assign(cause, { [field]: src[field] });
  return cause;
}

const DRIVER_FIELDS = [
  'code',
  'severity',
  'detail',
  'hint',
  'schema',
  'table',
  'column',
  'constraint',
  'routine',
];

function classify(sqlstate: string): { code: DbErrorCode; retryable: boolean } {
  const cls = sqlstate.slice(0, 2);
  if (cls === '08' || cls === '53' || ['57P01', '57P02', '57P03'].includes(sqlstate)) {
    return { code: 'db_unavailable', retryable: true };
  }
  if (sqlstate === '40001' || sqlstate === '40P01') return { code: 'db_conflict', retryable: true };
  if (sqlstate === '57014' || sqlstate === '55P03') return { code: 'db_timeout', retryable: true };
  if (cls === '23') return { code: 'db_constraint', retryable: false };
  if (sqlstate === '42P01' || sqlstate === '42703' || sqlstate === '3F000') {
    return { code: 'db_schema', retryable: false };
  }
  return { code: 'db_error', retryable: false };
}

function classifyDriver(chain: readonly ErrorLike[]): { code: DbErrorCode; retryable: boolean } {
  const unavailable = chain.some(
    (e) =>
      (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) ||
      (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((m) => e.message?.includes(m))),
  );
  return unavailable ? { code: 'db_unavailable', retryable: true } : { code: 'db_error', retryable: false };
}

interface ErrorLike {
  readonly code?: unknown;
  readonly message?: string;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

/** The error, its causes, and the first of an AggregateError's errors (a refused dual-stack connect). */
function causes(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let current: unknown = err;
  while (typeof current === 'object' && current !== null && out.length < 8) {
    const e = current as ErrorLike;
    out.push(e);
    current = e.cause ?? (Array.isArray(e.errors) ? e.errors[0] : undefined);
  }
  return out;
}
