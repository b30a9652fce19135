import { describe, expect, it } from 'vitest';
import { memoryFingerprint } from './memory.js';

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
