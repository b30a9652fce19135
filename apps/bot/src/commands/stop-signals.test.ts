import { RecordingLogger } from '@ebb/testing/recording-logger';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { exitIfLingering, LINGER_MS } from './stop-signals.js';

describe('exitIfLingering', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('exits with the code, saying what was still open, once a stopped process outstays its time', async () => {
    const logger = new RecordingLogger();
    const exit = vi.fn();
    exitIfLingering(logger, 0, { exit });
    await vi.advanceTimersByTimeAsync(LINGER_MS - 1);
    expect(exit).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(exit).toHaveBeenCalledWith(0);
    const line = logger.entries.find((e) => e.fields.event === 'shutdown.lingering');
    expect(line?.level).toBe('warn');
    expect(line?.fields.resources).toEqual(expect.arrayContaining([expect.any(String)]));
  });

  it('never holds the process itself: its timer is unref’d', () => {
    const timer = exitIfLingering(new RecordingLogger(), 0, { exit: () => {} });
    expect(timer.hasRef()).toBe(false);
  });
});
