import { expect, it } from 'vitest';
import { codedErrorText, errorCodeOf, errorText } from './error-text.js';
import { EbbError } from './errors.js';

it("is the message's first line, else the code, else the name; a thrown value as a string", () => {
  expect(errorText(new Error('connect failed\n    at stack'))).toBe('connect failed');
  expect(errorText(Object.assign(new Error(''), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
  expect(errorText(new TypeError(''))).toBe('TypeError');
  expect(errorText('plain string')).toBe('plain string');
  expect(errorText(42)).toBe('42');
});

it('masks the credentials of a URL', () => {
  expect(errorText(new Error('cannot reach postgres://ebb:hunter2@db:5432/ebb'))).toBe(
    'cannot reach postgres://ebb:***@db:5432/ebb',
  );
  expect(errorText('redis://:s3cret@cache:6379 refused')).toBe('redis://:***@cache:6379 refused');
});

it('puts a string code first when there is one', () => {
  expect(codedErrorText(new EbbError('the archive refused it', { code: 'db_constraint' }))).toBe(
    'db_constraint: the archive refused it',
  );
  expect(codedErrorText(Object.assign(new Error(''), { code: 'ECONNREFUSED' }))).toBe('ECONNREFUSED');
  expect(codedErrorText(new Error('no code'))).toBe('no code');
});

it('gives a code alone where a message must not go', () => {
  expect(errorCodeOf(new EbbError('the model refused: a quote of the chat', { code: 'llm_refused' }))).toBe(
    'llm_refused',
  );
  expect(errorCodeOf(Object.assign(new Error('stopped'), { name: 'AbortError' }))).toBe('aborted');
  expect(errorCodeOf(new Error('what was summarized'))).toBe('error');
  expect(errorCodeOf('a string thrown')).toBe('error');
});
