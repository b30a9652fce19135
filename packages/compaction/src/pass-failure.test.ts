/** `errorCode` (`pass-failure.ts`): the code a failed pass reports, found through the drivers' wrappers. */
import { EbbError } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import { errorCode } from './pass-failure.js';

describe('errorCode', () => {
  it('names the error code through wrappers (BullMQ wraps non-retryable errors)', () => {
    const wrapped = new Error('unrecoverable', {
      cause: new EbbError('constraint', { code: 'db_constraint' }),
    });
    expect(errorCode(wrapped)).toBe('db_constraint');
    expect(errorCode(new Error('plain'))).toBe('internal_error');
  });
});
