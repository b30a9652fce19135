/**
 * A channel at a spend limit keeps being compacted, on `[budget] cheaper_model`: the pass settings a
 * worker resolves for it read the channel's spend from the usage store, and pick the cheaper model
 * once a limit is reached, its own summarizer before and after the period.
 */
import { parseConfig } from '@ebb/config';
import { toNewMessage } from '@ebb/core';
import {
  InMemoryChannelStore,
  InMemoryMemoryStore,
  InMemoryRunStore,
  InMemoryUsageStore,
} from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { InProcessContextNotifier } from '@ebb/queue';
import { FakeOpenAiServer } from '@ebb/testing/openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { passSettingsResolver } from './channel-pass-settings.js';
import { createCompactionProcessor } from './compaction-processor.js';

const CHANNEL = 'web:capped';
const tokenizer = await loadTokenizer('o200k_base');

let fake: FakeOpenAiServer;
beforeAll(async () => {
  fake = await FakeOpenAiServer.start();
  fake.reply(() => ({ json: { summary: 'Earlier: the rollout plan.', memories: [] } }));
});
afterAll(async () => {
  await fake.close();
});

it('summarizes a channel at its limit on the cheaper model, and on its own once the period ends', async () => {
  const toml = [
    '[llm]',
    `base_url = "${fake.url}"`,
    '[compaction]',
    'summarizer_model = "gpt-5.4-mini"',
    '[prices."gpt-5.4-mini"]',
    'input_per_mtok = 1000',
    'output_per_mtok = 1000',
    '[prices."gpt-5.4-nano"]',
    'input_per_mtok = 1',
    'output_per_mtok = 1',
    `[channels."${CHANNEL}".budget]`,
    'daily_usd = 2',
    'over = "cheaper_model"',
    'cheaper_model = "gpt-5.4-nano"',
  ].join('\n');
  const config = parseConfig(toml, 'budget.toml');
  const usage = new InMemoryUsageStore();
  const clock = { now: Date.parse('2026-12-04T10:00:00Z') };
  const settingsFor = passSettingsResolver({
    config: () => config,
    env: { OPENAI_API_KEY: 'test-key' },
    retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    usage,
    now: () => clock.now,
  });
  const channels = new InMemoryChannelStore();
  for (let i = 1; i <= 90; i++) {
    const text = `message ${i} about the release: ${'the rollout plan and its checklist '.repeat(20)}`;
    await channels.append(CHANNEL, toNewMessage({ role: 'user', author: 'ana', text }, tokenizer, 1_000));
  }
  const processor = createCompactionProcessor({
    channels,
    memories: new InMemoryMemoryStore(),
    runs: new InMemoryRunStore(),
    takeBacks: channels.takeBacks,
    notifier: new InProcessContextNotifier(),
    settingsFor,
  });
  let generation = 0;
  const pass = async (n: number, fromSeq: number) => {
    const job = {
      jobId: `pass-${n}`,
      channelKey: CHANNEL,
      tier: 'background' as const,
      fromSeq,
      toSeq: fromSeq + 19,
    };
    await processor({ ...job, generation, attempt: 1 });
    generation = (await channels.loadContext(CHANNEL)).generation;
    return fake.completionRequests.at(-1)?.body.model;
  };
  // Under the limit: the channel's own summarizer.
  expect(await pass(1, 1)).toBe('gpt-5.4-mini');
  // The channel's replies spend $3 of its $2 today.
  const reply = {
    channelKey: CHANNEL,
    purpose: 'reply' as const,
    model: 'gpt-5.4-mini',
    calls: 1,
    cachedTokens: 0,
  };
  await usage.record({ ...reply, promptTokens: 3_000, completionTokens: 0 }, new Date(clock.now));
  expect(await pass(2, 21)).toBe('gpt-5.4-nano');
  // The next UTC day the limit has room again.
  clock.now = Date.parse('2026-12-05T00:30:00Z');
  expect(await pass(3, 41)).toBe('gpt-5.4-mini');
});
