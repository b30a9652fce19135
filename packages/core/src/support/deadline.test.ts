import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { settleWithin, TimeoutError, withTimeout } from './deadline.js';

describe('settleWithin', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('gives the value when the work settles in time, and leaves no timer behind', async () => {
    const outcome = settleWithin(Promise.resolve(7), 1_000);
    await expect(outcome).resolves.toEqual({ done: true, value: 7 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('says not done when the time runs out first, and a late rejection surfaces nowhere', async () => {
    let fail: (err: Error) => void = () => {};
    const work = new Promise<number>((_, reject) => {
      fail = reject;
    });
    const outcome = settleWithin(work, 50);
    await vi.advanceTimersByTimeAsync(50);
    await expect(outcome).resolves.toEqual({ done: false });
    const unhandled = vi.fn();
    process.on('unhandledRejection', unhandled);
    fail(new Error('late'));
    await vi.advanceTimersByTimeAsync(0);
    process.off('unhandledRejection', unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });

  it('rejects when the work rejects in time', async () => {
    await expect(settleWithin(Promise.reject(new Error('boom')), 1_000)).rejects.toThrow('boom');
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('withTimeout', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('throws a TimeoutError naming the time', async () => {
    const outcome = withTimeout(() => new Promise(() => {}), 20);
    const seen = expect(outcome).rejects.toEqual(new TimeoutError(20));
    await vi.advanceTimersByTimeAsync(20);
    await seen;
  });

  it('turns a synchronous throw of the work into a rejection', async () => {
    await expect(
      withTimeout(() => {
        throw new Error('sync');
      }, 20),
    ).rejects.toThrow('sync');
  });
});
