import { describe, expect, it } from 'vitest';
import { LlmError, type LlmErrorCode } from './errors.js';
import { retryDelayMs, withRetries } from './retry.js';

const failing = (code: LlmErrorCode, retryable: boolean, retryAfterMs?: number) =>
  new LlmError(code, { code, retryable, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });

/** A function that throws the given errors in turn, then returns 'ok'. */
function script(...errors: unknown[]) {
  const tries: number[] = [];
  const fn = async (attempt: number) => {
    tries.push(attempt);
    const error = errors[attempt - 1];
    if (error !== undefined) throw error;
    return 'ok';
  };
  return { fn, tries };
}

function options(overrides = {}) {
  const delays: number[] = [];
  return {
    delays,
    options: {
      attempts: 4,
      initialDelayMs: 100,
      maxDelayMs: 1_000,
      random: () => 0.999,
      sleep: async (ms: number) => {
        delays.push(ms);
      },
      ...overrides,
    },
  };
}

describe('withRetries', () => {
  it('returns the value, the tries it took and the code of each failed one', async () => {
    const { fn } = script(failing('llm_server', true));
    const { options: o, delays } = options();

    expect(await withRetries(fn, o)).toEqual({
      ok: true,
      value: 'ok',
      attempts: 2,
      delaysMs: delays,
      failures: ['llm_server'],
    });
    expect(delays).toHaveLength(1);
  });

  it('stops at once on an error that is not retryable', async () => {
    const { fn, tries } = script(failing('llm_auth', false));
    const { options: o, delays } = options();

    const result = await withRetries(fn, o);

    expect(result).toMatchObject({ ok: false, attempts: 1, error: { code: 'llm_auth' } });
    expect(tries).toEqual([1]);
    expect(delays).toEqual([]);
  });

  it('gives up after the attempts and returns the last error', async () => {
    const { fn, tries } = script(...Array.from({ length: 9 }, () => failing('llm_timeout', true)));
    const { options: o } = options();

    const result = await withRetries(fn, o);

    expect(result).toMatchObject({ ok: false, attempts: 4, error: { code: 'llm_timeout' } });
    expect(tries).toEqual([1, 2, 3, 4]);
  });

  it('backs off exponentially with full jitter under the cap', async () => {
    const { fn } = script(...Array.from({ length: 9 }, () => failing('llm_server', true)));
    const { options: o, delays } = options({ attempts: 6 });

    await withRetries(fn, o);

    expect(delays).toEqual([99, 199, 399, 799, 999]);
  });

  it('waits at least as long as the provider asked', async () => {
    const { fn } = script(failing('llm_rate_limited', true, 5_000), failing('llm_rate_limited', true, 10));
    const { options: o, delays } = options();

    await withRetries(fn, o);

    expect(delays).toEqual([5_000, 199]);
  });

  it('does not wait out a Retry-After beyond maxRetryAfterMs', async () => {
    const { fn, tries } = script(failing('llm_rate_limited', true, 120_000));
    const { options: o, delays } = options({ maxRetryAfterMs: 60_000 });

    const result = await withRetries(fn, o);

    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { code: 'llm_rate_limited', retryable: true },
    });
    expect(tries).toEqual([1]);
    expect(delays).toEqual([]);
  });

  it('tries malformed output fewer times than other errors', async () => {
    const { fn, tries } = script(...Array.from({ length: 9 }, () => failing('llm_malformed_output', true)));
    const { options: o } = options({ attempts: 8 });

    const result = await withRetries(fn, o);

    expect(result).toMatchObject({ ok: false, attempts: 3 });
    expect(tries).toHaveLength(3);
  });

  it('maps foreign errors', async () => {
    const { fn } = script(new TypeError('bug'));
    const { options: o } = options();

    expect(await withRetries(fn, o)).toMatchObject({
      ok: false,
      attempts: 1,
      error: { code: 'llm_unexpected' },
    });
  });

  it('stops when the signal aborts during a wait', async () => {
    const controller = new AbortController();
    const { fn, tries } = script(failing('llm_server', true), failing('llm_server', true));
    const { options: o } = options({
      sleep: async () => {
        controller.abort();
      },
    });

    const result = await withRetries(fn, o, controller.signal);

    expect(result).toMatchObject({ ok: false, error: { code: 'llm_aborted' } });
    expect(tries).toEqual([1]);
  });
});

describe('retryDelayMs', () => {
  it('draws from zero to the ceiling', () => {
    const o = { initialDelayMs: 100, maxDelayMs: 1_000 };
    expect(retryDelayMs(1, {}, o, () => 0)).toBe(0);
    expect(retryDelayMs(3, {}, o, () => 0.5)).toBe(200);
    expect(retryDelayMs(10, {}, o, () => 0.5)).toBe(500);
    expect(retryDelayMs(1, { retryAfterMs: 2_500 }, o, () => 0.5)).toBe(2_500);
  });
});
