/**
 * What the bot's usage reserves besides the conversation: the system prompt and the memories its
 * turn recalled, not the recall budget; and a turn recalls no more than its prompt has room for.
 * The real `Bot` against in-memory stores, the in-process queue and a model that records prompts.
 */
import { parseConfig } from '@ebb/config';
import {
  type ChatMessage,
  type ChatModel,
  MEMORIES_TAG,
  type PlatformHandlers,
  systemPromptTokens,
} from '@ebb/core';
import { InMemoryChannelStore, InMemoryMemoryStore, InMemoryRunStore } from '@ebb/core/testing';
import { loadTokenizer } from '@ebb/llm';
import { InlineCompactionQueue, InProcessContextNotifier } from '@ebb/queue';
import { RecordingLogger } from '@ebb/testing/recording-logger';
import { beforeEach, describe, expect, it } from 'vitest';
import { RecordingPlatform } from '../../test/recording-platform.js';
import { Bot } from './bot.js';

const tokenizer = await loadTokenizer('o200k_base');
const WITH_MEMORIES = 'slack:T1:C1';
const WITHOUT = 'slack:T1:C2';
/** 4,000 tokens, 500 for the reply: a budget of 3,500. */
const BUDGET = 3_500;

class RecordingModel implements ChatModel {
  readonly label = 'recording';
  readonly prompts: (readonly ChatMessage[])[] = [];
  async reply(messages: readonly ChatMessage[]) {
    this.prompts.push(messages);
    return { text: 'ok' };
  }
}

describe('the reserve the bot counts', () => {
  let channels: InMemoryChannelStore;
  let memories: InMemoryMemoryStore;
  let model: RecordingModel;
  let handlers: PlatformHandlers;
  const usage = new Map<string, number>();
  let n = 0;
  const say = (channelKey: string, text: string, mentionsBot = true) =>
    handlers.onMessage({
      platform: 'slack',
      channelKey,
      platformMessageId: `m${++n}`,
      authorId: 'U1',
      authorName: 'ana',
      fromBot: false,
      text,
      ts: new Date().toISOString(),
      mentionsBot,
      direct: false,
    });
  /** The memories block of the last prompt, in tokens (0 when none was sent). */
  const recalledTokens = () => {
    const block = model.prompts.at(-1)?.find((m) => m.content.startsWith(`<${MEMORIES_TAG}`));
    return block === undefined ? 0 : tokenizer.count(block.content) + 4;
  };

  beforeEach(async () => {
    channels = new InMemoryChannelStore();
    memories = new InMemoryMemoryStore();
    model = new RecordingModel();
    const config = parseConfig(
      [
        '[llm]',
        'context_window = 4000',
        'max_output_tokens = 500',
        'encoding = "o200k_base"',
        '[memory]',
        'recall_max_tokens = 600',
      ].join('\n'),
      'reserve.toml',
    );
    const bot = new Bot({
      config: () => config,
      channels,
      memories,
      runs: new InMemoryRunStore(),
      queue: new InlineCompactionQueue({ processor: async () => undefined }),
      notifier: new InProcessContextNotifier(),
      chatModel: () => model,
      logger: new RecordingLogger(),
      onTurn: (turn) => usage.set(turn.channel, turn.usage),
    });
    const platform = new RecordingPlatform('slack');
    await bot.start([platform]);
    handlers = platform.handlers as PlatformHandlers;
    await memories.upsert(
      ['rotates the signing keys on Friday', 'owns the deploy of the ledger service'].map((text) => ({
        type: 'fact' as const,
        text: `ana ${text}`,
        importance: 0.8,
        speaker: 'ana',
        fromSeq: 1,
        toSeq: 1,
        scope: WITH_MEMORIES,
        channelKey: WITH_MEMORIES,
      })),
    );
  });

  it('is the system prompt and the memories the turn recalled, never the unused recall budget', async () => {
    await say(WITHOUT, 'when does ana rotate the signing keys and deploy the ledger?');
    expect(recalledTokens()).toBe(0);
    // No memories, no reserve for them: the conversation and the system prompt (no tools offered).
    const context = (await channels.loadContext(WITHOUT)).tokens;
    const system = systemPromptTokens(tokenizer, 'You are Ebb, a helpful assistant in a team chat.');
    expect((usage.get(WITHOUT) ?? 0) * BUDGET).toBeCloseTo(context + system, 6);

    await say(WITH_MEMORIES, 'when does ana rotate the signing keys and deploy the ledger?');
    const recalled = recalledTokens();
    expect(recalled).toBeGreaterThan(0);
    expect(recalled).toBeLessThan(600);
    const withMemories = (await channels.loadContext(WITH_MEMORIES)).tokens;
    expect((usage.get(WITH_MEMORIES) ?? 0) * BUDGET).toBeCloseTo(withMemories + system + recalled, 6);
  });

  it('recalls memories only within the room the prompt has left under the emergency threshold', async () => {
    const question = 'when does ana rotate the signing keys and deploy the ledger?';
    const system = systemPromptTokens(tokenizer, 'You are Ebb, a helpful assistant in a team chat.');
    await say(WITH_MEMORIES, question);
    const whole = recalledTokens();
    expect(whole).toBeGreaterThan(0);
    // A turn that recalls nothing: the reserve holds no memories from here on.
    await say(WITH_MEMORIES, 'hello there');
    expect(recalledTokens()).toBe(0);
    // Fill the channel to where the conversation leaves room for about half of those memories
    // under the emergency threshold (0.95 of 3,500 tokens).
    const line = 'status: the ledger migration is still running on the replica';
    const limit = Math.floor(0.95 * BUDGET);
    const filled = async () => (await channels.loadContext(WITH_MEMORIES)).tokens + system + 40;
    for (let i = 0; i < 400 && (await filled()) < limit - whole / 2; i++)
      await say(WITH_MEMORIES, line, false);
    expect(await filled()).toBeGreaterThanOrEqual(limit - whole / 2);
    const before = (await channels.loadContext(WITH_MEMORIES)).tokens;
    await say(WITH_MEMORIES, question);
    // The conversation the prompt was rendered from: what was there, and the question. (With the
    // reply the channel may cross the threshold after the turn, and truncate, as it would have
    // with the whole recall budget reserved.)
    const asked = before + ((await channels.readArchive(WITH_MEMORIES, 1, 10_000)).at(-2)?.tokens ?? 0);
    expect(asked + system + whole).toBeGreaterThan(limit);
    expect(asked + system + recalledTokens()).toBeLessThanOrEqual(limit);
  });
});
