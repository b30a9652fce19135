import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteTokenizer, calibrate, UNCALIBRATED, usageOf } from './tokens.js';

describe('usageOf', () => {
  it('is the prompt over the window less the reply reserve, scaled by calibration', () => {
    const base = {
      contextTokens: 6_000,
      reservedTokens: 1_000,
      contextWindow: 12_000,
      maxOutputTokens: 2_000,
    };
    expect(usageOf({ ...base, calibration: UNCALIBRATED })).toBeCloseTo(0.7);
    expect(usageOf({ ...base, calibration: { factor: 1.2, samples: 5 } })).toBeCloseTo(0.84);
  });
});

describe('calibrate', () => {
  it('moves to the provider ratio at once, then follows it as a moving average', () => {
    const first = calibrate(UNCALIBRATED, 1_000, 1_100);
    expect(first).toEqual({ factor: 1.1, samples: 1 });
    let c = first;
    for (let i = 0; i < 50; i++) c = calibrate(c, 1_000, 1_250);
    expect(c.factor).toBeCloseTo(1.25, 3);
  });

  it('ignores empty reports and clamps absurd ratios', () => {
    expect(calibrate(UNCALIBRATED, 0, 500)).toBe(UNCALIBRATED);
    expect(calibrate(UNCALIBRATED, 500, 0)).toBe(UNCALIBRATED);
    expect(calibrate(UNCALIBRATED, 100, 100_000).factor).toBe(2);
  });
});

describe('ByteTokenizer', () => {
  it("counts a text's UTF-8 bytes, and encodes and decodes them", () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const bytes = new TextEncoder().encode(text);
        const tokenizer = new ByteTokenizer();
        expect(tokenizer.count(text)).toBe(bytes.length);
        expect(tokenizer.decode(tokenizer.encode(text))).toBe(new TextDecoder().decode(bytes));
      }),
      { numRuns: 500 },
    );
    // A pair is one code point of four bytes; a lone surrogate is written as U+FFFD, three.
    expect(new ByteTokenizer().count('a🌊é\ud800x')).toBe(1 + 4 + 2 + 3 + 1);
  });
});
