import { EbbError, tierRank } from '@ebb/core';
import { describe, expect, it } from 'vitest';
import {
  COMPACTION_QUEUE_NAME,
  compactionJobId,
  DEFAULT_COMPACTION_JOB_OPTIONS,
  decodeChannelKey,
  encodeChannelKey,
  InvalidCompactionPayloadError,
  parseCompactionPayload,
  retryDelayMs,
  tierPriority,
} from './compaction-jobs.js';
import { redisKeys } from './redis-keys.js';

const valid = {
  channelKey: 'slack:T1:C1:1700000000.000100',
  tier: 'background',
  fromSeq: 1,
  toSeq: 40,
  generation: 3,
};

describe('parseCompactionPayload', () => {
  it('accepts a range, a generation and an optional focus', () => {
    expect(parseCompactionPayload(valid)).toEqual(valid);
    expect(parseCompactionPayload({ ...valid, focus: 'decisions' })).toEqual({
      ...valid,
      focus: 'decisions',
    });
    expect(parseCompactionPayload({ ...valid, fromSeq: 7, toSeq: 7, generation: 0 })).toMatchObject({
      toSeq: 7,
    });
  });

  it.each([
    ['message text', { ...valid, text: 'hello everyone' }],
    ['a missing field', { ...valid, generation: undefined }],
    ['an unknown tier', { ...valid, tier: 'urgent' }],
    ['fromSeq 0', { ...valid, fromSeq: 0 }],
    ['toSeq before fromSeq', { ...valid, fromSeq: 10, toSeq: 9 }],
    ['a negative generation', { ...valid, generation: -1 }],
    ['a fractional seq', { ...valid, toSeq: 4.5 }],
    ['an empty channel key', { ...valid, channelKey: '' }],
    ['a focus over 500 characters', { ...valid, focus: 'x'.repeat(501) }],
    ['an explicit undefined focus', { ...valid, focus: undefined }],
    ['not an object', 'slack:T1:C1'],
  ])('rejects %s with a non-retryable typed error', (_name, data) => {
    let caught: unknown;
    try {
      parseCompactionPayload(data);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidCompactionPayloadError);
    expect(caught).toBeInstanceOf(EbbError);
    expect(caught).toMatchObject({ code: 'invalid_compaction_payload', retryable: false });
  });
});

describe('compactionJobId', () => {
  it('is deterministic, free of ":" and never an integer', () => {
    const id = compactionJobId(parseCompactionPayload(valid));
    expect(id).toBe(compactionJobId({ ...valid, tier: 'background' }));
    expect(id).not.toContain(':');
    expect(`${Number.parseInt(id, 10)}`).not.toBe(id);
    expect(id).toBe('slack%3AT1%3AC1%3A1700000000%2E000100.background.g3.s1-40');
  });

  it('differs when the tier, generation or range differs, and not for focus', () => {
    const base = parseCompactionPayload(valid);
    const ids = new Set([
      compactionJobId(base),
      compactionJobId({ ...base, tier: 'aggressive' }),
      compactionJobId({ ...base, generation: 4 }),
      compactionJobId({ ...base, toSeq: 41 }),
      compactionJobId({ ...base, fromSeq: 2 }),
    ]);
    expect(ids.size).toBe(5);
    expect(compactionJobId({ ...base, focus: 'x' })).toBe(compactionJobId(base));
  });

  it('keeps the channel key recoverable from the first segment', () => {
    for (const key of ['discord:1:2', 'web:a.b.c', 'slack:T:C:1.2', 'odd%key/with spaces']) {
      const id = compactionJobId({ ...valid, channelKey: key, tier: 'emergency' });
      expect(id.split('.')).toHaveLength(4);
      expect(decodeChannelKey(id.split('.')[0] ?? '')).toBe(key);
      expect(encodeChannelKey(key)).not.toMatch(/[:.]/);
    }
  });
});

describe('tiers', () => {
  it('ranks emergency over aggressive over background, and BullMQ serves them in that order', () => {
    expect(tierRank('emergency')).toBeGreaterThan(tierRank('aggressive'));
    expect(tierRank('aggressive')).toBeGreaterThan(tierRank('background'));
    expect(tierPriority('emergency')).toBeLessThan(tierPriority('aggressive'));
    expect(tierPriority('aggressive')).toBeLessThan(tierPriority('background'));
    expect(tierPriority('emergency')).toBeGreaterThanOrEqual(1);
  });
});

describe('retryDelayMs', () => {
  it('doubles from the base delay without jitter', () => {
    const backoff = { type: 'exponential', delay: 2_000, jitter: 0 } as const;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(backoff, n))).toEqual([2_000, 4_000, 8_000, 16_000]);
  });

  it('takes off at most the jitter fraction', () => {
    const backoff = DEFAULT_COMPACTION_JOB_OPTIONS.backoff;
    expect(retryDelayMs(backoff, 2, () => 0)).toBe(4_000 * (1 - backoff.jitter));
    expect(retryDelayMs(backoff, 2, () => 0.999_999)).toBeLessThanOrEqual(4_000);
  });

  it('defaults to 5 attempts and bounded retention', () => {
    expect(DEFAULT_COMPACTION_JOB_OPTIONS.attempts).toBe(5);
    expect(DEFAULT_COMPACTION_JOB_OPTIONS.removeOnComplete.count).toBeGreaterThan(0);
    expect(DEFAULT_COMPACTION_JOB_OPTIONS.removeOnFail.age).toBeGreaterThan(0);
  });
});

describe('redisKeys', () => {
  it('builds every key from the prefix', () => {
    const keys = redisKeys('ebb');
    expect(keys.bullmqPrefix).toBe('ebb');
    expect(keys.contextChanged).toBe('ebb:context-changed');
    expect(keys.compactionDedupeKey('slack:T1:C1')).toBe(`ebb:${COMPACTION_QUEUE_NAME}:de:slack%3AT1%3AC1`);
    expect(keys.compactionEnqueueLock('slack:T1:C1')).toBe('ebb:lock:compaction-enqueue:slack%3AT1%3AC1');
    expect(keys.everything).toBe('ebb:*');
    expect(redisKeys().prefix).toBe('ebb');
  });

  it.each(['', 'a:b', 'ebb*', 'with space'])('refuses the prefix %j', (prefix) => {
    expect(() => redisKeys(prefix)).toThrow(EbbError);
  });
});
