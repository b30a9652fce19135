import { describe, expect, it } from 'vitest';
import { SEARCH_WINDOWS, seqWindows } from './pg-archive-search.js';

describe('seqWindows', () => {
  it('cuts a long range into windows ten times larger each, newest first, covering it once', () => {
    expect(SEARCH_WINDOWS).toEqual([4_000, 40_000, 400_000]);
    expect(seqWindows(1, 1_000_000)).toEqual([
      [996_001, 1_000_000],
      [956_001, 996_000],
      [556_001, 956_000],
      [1, 556_000],
    ]);
  });

  it('keeps a short range whole, and stops a window at the range start', () => {
    expect(seqWindows(1, 10)).toEqual([[1, 10]]);
    expect(seqWindows(5, 4_004)).toEqual([[5, 4_004]]);
    expect(seqWindows(1, 4_001)).toEqual([
      [2, 4_001],
      [1, 1],
    ]);
    expect(seqWindows(100, 50_000)).toEqual([
      [46_001, 50_000],
      [6_001, 46_000],
      [100, 6_000],
    ]);
  });
});
