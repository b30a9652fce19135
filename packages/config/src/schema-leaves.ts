/**
 * The leaves the `config.toml` schema is built from (`config-schema.ts` and its sections): every
 * check says what it expected in the same words, `must be …`, which is what `ebb config check` and a
 * refused start print after the TOML path. `TABLE` is the message of every table.
 */
import { z } from 'zod';

export const mustBe = (expected: string) => ({ error: `must be ${expected}` });
export const TABLE = mustBe('a table');
const oneOf = (values: readonly string[]) =>
  `one of ${values.map((value) => JSON.stringify(value)).join(', ')}`;

export const text = (expected: string) => z.string(mustBe(expected)).min(1, mustBe(expected));
export const modelName = () => text('a non-empty model name');
export const positiveInt = () => {
  const error = mustBe('a positive integer');
  return z.number(error).int(error).positive(error);
};
export const nonNegativeInt = () => {
  const error = mustBe('an integer >= 0');
  return z.number(error).int(error).nonnegative(error);
};
export const threshold = () => {
  const error = mustBe('a number above 0 and at most 1');
  return z.number(error).gt(0, error).lte(1, error);
};
export const fraction = () => {
  const error = mustBe('a number between 0 and 1 (exclusive)');
  return z.number(error).gt(0, error).lt(1, error);
};
export const enumOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, mustBe(oneOf(values)));
