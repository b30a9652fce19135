import { RecordingLogger } from '@ebb/testing/recording-logger';
import { describe, expect, it } from 'vitest';
import { CacheSilence } from './cache-silence.js';

describe('CacheSilence', () => {
  it('hands over a channel once its lifetime ran out since its last reply, once per silence', () => {
    let now = 0;
    const cold: string[] = [];
    const silence = new CacheSilence({
      onCold: (key) => cold.push(key),
      logger: new RecordingLogger(),
      now: () => now,
    });
    silence.replied('a', 0, 300_000);
    silence.replied('b', 0, 86_400_000);
    now = 200_000;
    silence.replied('a', now, 300_000); // a reply pushes the moment on
    now = 400_000;
    silence.check();
    expect(cold).toEqual([]);
    now = 500_001;
    silence.check();
    silence.check();
    expect(cold).toEqual(['a']);
    now = 86_400_001;
    silence.check();
    expect(cold).toEqual(['a', 'b']);
  });
});
