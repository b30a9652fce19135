import { parseConfig } from '@ebb/config';
import { type ChannelSummary, InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core';
import { expect, it, vi } from 'vitest';
import { loadChannelStatus } from './channel-status.js';

const config = parseConfig('', 'status.toml');

function summary(key: string): ChannelSummary {
  return { key, headSeq: 0, generation: 0, tokens: 0 };
}

it('skips the memory count with memoryCounts: false and counts a shared system prompt once per report', async () => {
  const memories = new InMemoryMemoryStore();
  const count = vi.spyOn(memories, 'count');
  const stores = { channels: new InMemoryChannelStore(), runs: new InMemoryRunStore(), memories };
  const systemTokens = new Map<string, Promise<number>>();

  const a = await loadChannelStatus(stores, config, summary('web:a'), { memoryCounts: false, systemTokens });
  const b = await loadChannelStatus(stores, config, summary('web:b'), { memoryCounts: false, systemTokens });

  expect(a.memories).toEqual({ scope: 'web:a', count: null });
  expect(b.memories).toEqual({ scope: 'web:b', count: null });
  expect(systemTokens.size).toBe(1);
  expect(b.tokens.reserved).toBe(a.tokens.reserved);
  // The default counts, and reserves the same tokens as the memoized prompt count.
  const counted = await loadChannelStatus(stores, config, summary('web:a'));
  expect(counted.memories).toEqual({ scope: 'web:a', count: 0 });
  expect(count).toHaveBeenCalledTimes(1);
  expect(counted.tokens.reserved).toBe(a.tokens.reserved);
});
