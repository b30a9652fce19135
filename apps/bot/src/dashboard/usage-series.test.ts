import { describe, expect, it } from 'vitest';
import { UsageSeries } from './usage-series.js';

describe('UsageSeries', () => {
  it('keeps the newest points of a channel, oldest first', () => {
    const series = new UsageSeries({ points: 3 });
    for (let i = 1; i <= 5; i++) series.record('web:a', i * 1000, i / 10);
    expect(series.read('web:a').points).toEqual([
      { at: 3000, usage: 0.3 },
      { at: 4000, usage: 0.4 },
      { at: 5000, usage: 0.5 },
    ]);
    expect(series.read('web:b')).toEqual({ points: [], marks: [] });
  });

  it('forgets the least recently fed channel past its capacity', () => {
    const series = new UsageSeries({ channels: 2 });
    series.record('web:a', 1, 0.1);
    series.record('web:b', 2, 0.2);
    series.record('web:a', 3, 0.3);
    series.record('web:c', 4, 0.4);
    expect(series.read('web:b').points).toEqual([]);
    expect(series.read('web:a').points).toHaveLength(2);
    expect(series.read('web:c').points).toHaveLength(1);
  });

  it('draws a mark as a drop (a point before, a point after) and keeps at most `marks` of them', () => {
    const series = new UsageSeries({ marks: 2 });
    series.record('web:a', 1, 0.7);
    for (const at of [2, 3, 4]) series.mark('web:a', { at, usage: 0.75, after: 0.5, kind: 'microcompact' });
    const { points, marks } = series.read('web:a');
    expect(points.slice(0, 3)).toEqual([
      { at: 1, usage: 0.7 },
      { at: 2, usage: 0.75 },
      { at: 2, usage: 0.5 },
    ]);
    expect(marks.map((m) => m.at)).toEqual([3, 4]);
  });

  it('ignores usage that is not a number', () => {
    const series = new UsageSeries();
    series.record('web:a', 1, Number.NaN);
    expect(series.read('web:a').points).toEqual([]);
  });
});
