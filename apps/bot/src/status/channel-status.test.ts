import { parseConfig, resolveChannel } from '@ebb/config';
import { ChannelSpend, type ChannelSummary, historyTools } from '@ebb/core';
import {
  InMemoryArchiveSearch,
  InMemoryChannelStore,
  InMemoryMemoryStore,
  InMemoryRunStore,
  InMemoryUsageStore,
} from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { Toolbox } from '@ebb/tools';
import { expect, it, vi } from 'vitest';
import { loadChannelStatus } from './channel-status.js';
import { OfferedTools } from './offered-tools.js';
import { builtInToolTokens } from './prompt-measure.js';

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

it('reserves the built-in tools a channel allows as the bot counts them, and none it does not', async () => {
  const tokenizer = await loadTokenizer('o200k_base');
  const builtIns = historyTools(new InMemoryArchiveSearch(new InMemoryChannelStore()), {
    tokenizerFor: async () => tokenizer,
    maxResultTokens: 4_000,
  });
  const bot = new OfferedTools(new Toolbox({ builtIns }));
  const allowing = (allow: string) =>
    resolveChannel(parseConfig(`[tools]\nallow = ${allow}`, 'status.toml'), 'web:a');

  for (const allow of ['["search_history", "read_history"]', '["search_history"]', '["*_history"]']) {
    const settings = allowing(allow);
    expect(builtInToolTokens(settings, tokenizer), allow).toBe(bot.tokensFor(settings, tokenizer));
    expect(builtInToolTokens(settings, tokenizer), allow).toBeGreaterThan(100);
  }
  expect(builtInToolTokens(allowing('[]'), tokenizer)).toBe(0);
});

it("shows each spend limit with what was spent toward it this period, the workspace's across its channels", async () => {
  const budgeted = parseConfig(
    '[prices."gpt-5.4-mini"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n' +
      '[slack.budget]\ndaily_usd = 5\nworkspace_monthly_usd = 20\n',
    'status.toml',
  );
  const usage = new InMemoryUsageStore();
  const turn = (channelKey: string, promptTokens: number) => ({
    channelKey,
    purpose: 'reply' as const,
    model: 'gpt-5.4-mini',
    calls: 1,
    promptTokens,
    cachedTokens: 0,
    completionTokens: 0,
  });
  await usage.record(turn('slack:T1:C1', 2_000), new Date('2026-12-04T08:10:00Z'));
  await usage.record(turn('slack:T1:C1', 1_000), new Date('2026-12-03T23:00:00Z'));
  await usage.record(turn('slack:T1:C2', 4_000), new Date('2026-12-02T10:00:00Z'));
  await usage.record(turn('slack:T2:C1', 9_000), new Date('2026-12-04T08:00:00Z'));
  const stores = {
    channels: new InMemoryChannelStore(),
    runs: new InMemoryRunStore(),
    memories: new InMemoryMemoryStore(),
    usage,
  };
  const now = () => Date.parse('2026-12-04T09:30:00Z');
  const status = await loadChannelStatus(stores, budgeted, summary('slack:T1:C1'), { now });
  expect(status.budget).toEqual([
    { scope: 'channel', period: 'day', limitUsd: 5, spentUsd: 2, resetsAt: new Date('2026-12-05T00:00:00Z') },
    {
      scope: 'workspace',
      period: 'month',
      limitUsd: 20,
      spentUsd: 7,
      resetsAt: new Date('2027-01-01T00:00:00Z'),
    },
  ]);
  // A channel with no limit has none to show.
  expect((await loadChannelStatus(stores, budgeted, summary('web:a'), { now })).budget).toBeNull();

  // A report's channels share what is spent: the workspace's closed hours are read once, not per channel.
  const spend = new ChannelSpend({ usage, prices: () => budgeted.prices });
  const reads = vi.spyOn(usage, 'totalsIn');
  for (const key of ['slack:T1:C1', 'slack:T1:C2'])
    await loadChannelStatus(stores, budgeted, summary(key), { now, spend });
  const closedWorkspaceReads = reads.mock.calls.filter(
    ([q]) => 'keyPrefix' in q.channel && q.to !== undefined,
  );
  expect(closedWorkspaceReads).toHaveLength(1);
});
