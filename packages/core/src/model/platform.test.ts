import { describe, expect, it } from 'vitest';
import { platformOf } from './platform.js';

describe('platformOf', () => {
  it('reads the platform from a key or pattern prefix', () => {
    expect(platformOf('slack:T1:C1')).toBe('slack');
    expect(platformOf('discord:*')).toBe('discord');
    expect(platformOf('web:abc')).toBe('web');
    expect(platformOf('slackish:1')).toBeUndefined();
    expect(platformOf('*')).toBeUndefined();
  });
});
