import { describe, expect, it } from 'vitest';
import { MAX_TOOLS_PER_CHANNEL, planToolOffer } from './tool-offer.js';

const many = (server: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${server}.t${String(i).padStart(3, '0')}`);

describe('planToolOffer', () => {
  it('offers at most 128 of the allowed tools, in the order given, and names the rest', () => {
    const names = ['search_history', 'read_history', ...many('big', 200)];
    const offer = planToolOffer(names, ['*']);
    expect(MAX_TOOLS_PER_CHANNEL).toBe(128);
    expect(offer.offered).toHaveLength(128);
    expect(offer.offered.slice(0, 3)).toEqual(['search_history', 'read_history', 'big.t000']);
    expect(offer.leftOut).toEqual(names.slice(128));
  });

  it('counts only what the patterns allow, and a repeated name once', () => {
    const offer = planToolOffer(
      ['search_history', 'search_history', ...many('big', 200)],
      ['search_history', 'big.t00*'],
    );
    expect(offer).toEqual({ offered: ['search_history', ...many('big', 10)], leftOut: [] });
  });
});
