import { describe, expect, it } from 'vitest';
import { isThreadKeyOf, platformOf, threadKeyRange } from './platform.js';

describe('platformOf', () => {
  it('reads the platform from a key or pattern prefix', () => {
    expect(platformOf('slack:T1:C1')).toBe('slack');
    expect(platformOf('discord:*')).toBe('discord');
    expect(platformOf('web:abc')).toBe('web');
    expect(platformOf('slackish:1')).toBeUndefined();
    expect(platformOf('*')).toBeUndefined();
  });
});

describe('thread keys', () => {
  const keys = [
    'slack:T1:C1',
    'slack:T1:C1:1700000000.000100',
    'slack:T1:C12',
    'slack:T1:C12:1.2',
    'slack:T1:C1;',
  ];

  it('are the keys under a channel on its separator, not a channel whose id it prefixes', () => {
    expect(keys.filter((k) => isThreadKeyOf(k, 'slack:T1:C1'))).toEqual(['slack:T1:C1:1700000000.000100']);
    expect(keys.filter((k) => isThreadKeyOf(k, 'slack:T1:C12'))).toEqual(['slack:T1:C12:1.2']);
  });

  it('lie in the range, in code-unit order, and no other key does', () => {
    const { from, to } = threadKeyRange('slack:T1:C1');
    const inRange = keys.filter((k) => k >= from && k < to);
    expect(inRange).toEqual(keys.filter((k) => isThreadKeyOf(k, 'slack:T1:C1')));
  });
});
