import { describe, expect, it } from 'vitest';
import { comparePatterns, patternMatches, patternSubsumes } from './channel-pattern.js';

describe('channel patterns', () => {
  it.each([
    ['slack:T1:C1*', 'slack:T1:C1', true],
    ['slack:T1:C1*', 'slack:T1:C1:1700000000.1234', true],
    ['slack:T1:C1*', 'slack:T1:C2', false],
    ['slack:*', 'slack:T1:C1:1700000000.1234', true],
    ['slack:*:C1', 'slack:T1:C1', true],
    ['slack:*:C1', 'slack:T1:C1:1700000000.1234', false],
    ['*', 'web:x', true],
    ['web:a.b', 'web:aXb', false],
    ['web:(x)+', 'web:(x)+', true],
    ['discord:1:2', 'discord:1:23', false],
  ])('%s matches %s: %s', (pattern, key, expected) => {
    expect(patternMatches(pattern, key)).toBe(expected);
  });

  it.each([
    ['slack:*', 'slack:T1:*', true],
    ['slack:*', 'slack:T1:C1', true],
    ['*', 'slack:*:C1', true],
    ['slack:T1:*', 'slack:*', false],
    ['slack:T1:*', 'slack:*:C1', false],
    ['slack:*:C1', 'slack:T1:*', false],
    ['slack:T1:C1*', 'slack:T1:C1:*', true],
    ['slack:T1:C1', 'slack:T1:C1*', false],
    ['web:x', 'web:*', false],
    ['web:*x', 'web:*', false],
  ])('%s covers every key of %s: %s', (general, specific, expected) => {
    expect(patternSubsumes(general, specific)).toBe(expected);
  });

  it('orders patterns from least to most specific', () => {
    const patterns = ['slack:T1:C1*', '*', 'slack:*:C1', 'slack:*', '*slack:T1:*', 'slack:T1:*'];
    const sorted = patterns
      .map((pattern, index) => ({ pattern, index }))
      .sort(comparePatterns)
      .map((entry) => entry.pattern);
    expect(sorted).toEqual(['*', 'slack:*', '*slack:T1:*', 'slack:*:C1', 'slack:T1:*', 'slack:T1:C1*']);
  });
});
