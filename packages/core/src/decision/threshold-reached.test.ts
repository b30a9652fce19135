import { expect, it } from 'vitest';
import { thresholdReached } from './threshold-reached.js';

const thresholds = { background: 0.8, aggressive: 0.85, emergency: 0.95 };

it('names the highest threshold usage is at or above', () => {
  expect(thresholdReached(0, thresholds)).toBe('none');
  expect(thresholdReached(0.79, thresholds)).toBe('none');
  expect(thresholdReached(0.8, thresholds)).toBe('background');
  expect(thresholdReached(0.85, thresholds)).toBe('aggressive');
  expect(thresholdReached(0.95, thresholds)).toBe('emergency');
  expect(thresholdReached(1.4, thresholds)).toBe('emergency');
});
