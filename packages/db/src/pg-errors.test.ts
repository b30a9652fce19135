import { EbbError } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { describeThrown, toEbbError } from './pg-errors.js';

/** What drizzle throws: its wrapper, quoting the query and parameters, around the driver's error. */
function wrapped(cause: object): Error {
  return Object.assign(new Error('Failed query: insert …\nparams: secret message text'), {
    params: ['secret message text'],
    cause,
  });
}

describe('toEbbError', () => {
  it.each([
    ['40001', 'db_conflict', true],
    ['40P01', 'db_conflict', true],
    ['57P01', 'db_unavailable', true],
    ['08006', 'db_unavailable', true],
    ['53300', 'db_unavailable', true],
    ['57014', 'db_timeout', true],
    ['23505', 'db_constraint', false],
    ['42P01', 'db_schema', false],
    ['22P02', 'db_error', false],
  ])('maps SQLSTATE %s to %s', (sqlstate, code, retryable) => {
    const err = toEbbError(wrapped(Object.assign(new Error('boom'), { code: sqlstate })), {
      doing: 'splice',
    });
    expect(err).toBeInstanceOf(EbbError);
    expect(err).toMatchObject({ code, retryable, message: `splice failed: boom (SQLSTATE ${sqlstate})` });
  });

  it('maps lost and refused connections to a retryable db_unavailable', () => {
    const refused = new AggregateError([
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    ]);
    expect(toEbbError(wrapped(refused), { doing: 'append' })).toMatchObject({
      code: 'db_unavailable',
      retryable: true,
    });
    const lost = new Error('Connection terminated unexpectedly');
    expect(toEbbError(lost, { doing: 'append' })).toMatchObject({ code: 'db_unavailable', retryable: true });
  });

  it('keeps the query parameters (message text) out of the error and its cause', () => {
    const err = toEbbError(wrapped(Object.assign(new Error('boom'), { code: '23505', params: ['x'] })), {
      doing: 'append',
    });
    expect(JSON.stringify({ ...err, cause: { ...(err.cause as object) } })).not.toContain('secret');
    expect(err.message).not.toContain('secret');
    expect(err.cause).toMatchObject({ code: '23505', message: 'boom' });
    expect(err.cause).not.toHaveProperty('params');
  });

  it('passes an EbbError through and maps anything else to db_error', () => {
    const ebb = new EbbError('x', { code: 'invariant_violated' });
    expect(toEbbError(ebb, { doing: 'splice' })).toBe(ebb);
    expect(toEbbError(new Error('odd'), { doing: 'splice' })).toMatchObject({
      code: 'db_error',
      retryable: false,
    });
  });

  it("describes what PGlite's file system throws, an object with no message, by its fields", () => {
    // What PGlite.create threw when its data directory was removed under it.
    const err = toEbbError({ name: 'ErrnoError', errno: 44 }, { doing: 'open PGlite' });
    expect(err.message).toBe(
      'open PGlite failed: ErrnoError {"errno":44} (ENOENT: no such file or directory)',
    );
    expect(err).toMatchObject({ code: 'db_error', retryable: false });
    expect(describeThrown({ code: 'XX', query: 'secret message text', params: ['secret'] })).toBe(
      'Object {"code":"XX"}',
    );
    expect(describeThrown('plain')).toBe('plain');
  });
});
