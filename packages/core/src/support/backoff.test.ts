import { expect, it } from 'vitest';
import { backoffDelayMs } from './backoff.js';

it('doubles from the initial wait up to the cap, exactly without jitter', () => {
  const backoff = { initialDelayMs: 1_000, maxDelayMs: 5_000 };
  expect([1, 2, 3, 4, 10].map((n) => backoffDelayMs(backoff, n))).toEqual([
    1_000, 2_000, 4_000, 5_000, 5_000,
  ]);
  const uncapped = { initialDelayMs: 2_000, maxDelayMs: Number.POSITIVE_INFINITY };
  expect(backoffDelayMs(uncapped, 6)).toBe(64_000);
});

it('draws the jitter share of the wait at random: full jitter spans 0..d, a share keeps the rest', () => {
  const full = { initialDelayMs: 100, maxDelayMs: 500, jitter: 1 };
  expect(backoffDelayMs(full, 1, () => 0)).toBe(0);
  expect(backoffDelayMs(full, 3, () => 0.5)).toBe(200);
  expect(backoffDelayMs(full, 10, () => 0.5)).toBe(250);
  const part = { initialDelayMs: 2_000, maxDelayMs: Number.POSITIVE_INFINITY, jitter: 0.2 };
  expect(backoffDelayMs(part, 2, () => 0)).toBe(3_200);
  expect(backoffDelayMs(part, 2, () => 0.999_999)).toBeLessThanOrEqual(4_000);
});
