import { describe, expect, it } from 'vitest';
import { memoryFingerprint, memoryScope } from './memory.js';

describe('memoryFingerprint', () => {
  it('is the same for near-duplicates and retries', () => {
    expect(memoryFingerprint('preference', 'Ana prefers tea.')).toBe(
      memoryFingerprint('preference', 'ana prefers  the TEA'),
    );
  });

  it('tells apart different facts and different types', () => {
    expect(memoryFingerprint('fact', 'deploys on Tuesday')).not.toBe(
      memoryFingerprint('fact', 'deploys on Thursday'),
    );
    expect(memoryFingerprint('fact', 'deploys on Tuesday')).not.toBe(
      memoryFingerprint('decision', 'deploys on Tuesday'),
    );
  });

  it('stays bounded for very long texts', () => {
    expect(memoryFingerprint('fact', 'word '.repeat(1000)).length).toBeLessThanOrEqual(500);
  });
});

describe('memoryScope', () => {
  it.each([
    ['slack:T1:C1', 'channel', 'slack:T1:C1'],
    ['slack:T1:C1:1700000000.1234', 'channel', 'slack:T1:C1'],
    ['slack:T1:C1:1700000000.1234', 'workspace', 'slack:T1'],
    ['discord:G1:C9', 'channel', 'discord:G1:C9'],
    ['discord:G1:C9:T7', 'channel', 'discord:G1:C9'],
    ['discord:G1:C9', 'workspace', 'discord:G1'],
    ['web:abc', 'workspace', 'web:abc'],
    // Direct and group messages keep their own scope, whatever the setting.
    ['slack:T1:D0ALICE:1700000000.1', 'workspace', 'slack:T1:D0ALICE'],
    ['slack:T1:G0SECRET', 'workspace', 'slack:T1:G0SECRET'],
    ['discord:dm:555', 'workspace', 'discord:dm:555'],
    ['discord:dm:555', 'channel', 'discord:dm:555'],
  ] as const)('%s with %s scope → %s', (key, setting, scope) => {
    expect(memoryScope(key, setting)).toBe(scope);
  });
});
