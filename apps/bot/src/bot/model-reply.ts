/**
 * Asking the model for a channel's reply: memories of the channel's scope recalled within their
 * budget, the prompt rendered from the working context (with a typing indicator), the calibration
 * learned from the provider's prompt count, and a provider context overflow answered by truncating
 * and asking again.
 */
import type { ResolvedChannelConfig } from '@ebb/config';
import {
  type ChannelStore,
  type ChatModel,
  calibrate,
  chatMessageTokens,
  type Memory,
  type MemoryStore,
  memoryScope,
  renderContext,
  renderMemories,
  type Tokenizer,
  WorkingContext,
} from '@ebb/core';
import { isLlmError } from '@ebb/llm';
import type { BotCompaction } from './bot-compaction.js';
import type { ChannelState } from './channel-states.js';

/** Provider overflows in a row that the bot answers by truncating again before it gives up. */
const MAX_OVERFLOW_RETRIES = 2;
const RECALL_CANDIDATES = 20;
/** Calibration is kept in memory and saved to the channel row every this many replies. */
const CALIBRATION_SAVE_EVERY = 10;

export interface ModelReplierOptions {
  readonly channels: ChannelStore;
  readonly memories: MemoryStore;
  /** The model that answers in a channel (channels may use different models). */
  readonly chatModel: (channelKey: string) => ChatModel;
  readonly compaction: BotCompaction;
}

export class ModelReplier {
  readonly #options: ModelReplierOptions;

  constructor(options: ModelReplierOptions) {
    this.#options = options;
  }

  /**
   * The model's reply to `text`; `state` gets the calibration learned and any truncation made.
   * `typing` shows the channel's typing indicator, before each model call.
   */
  async reply(
    key: string,
    state: ChannelState,
    tokenizer: Tokenizer,
    settings: ResolvedChannelConfig,
    text: string,
    typing: () => void,
  ): Promise<string> {
    const { compaction } = this.#options;
    const recalled = await this.#recall(key, settings, tokenizer, text);
    for (let attempt = 0; ; attempt++) {
      const messages = renderContext({
        systemPrompt: settings.bot.systemPrompt,
        memories: recalled.memories,
        context: state.context.view(),
      });
      typing();
      try {
        const reply = await this.#options.chatModel(key).reply(messages);
        if (reply.promptTokens) {
          // Against what was actually rendered (recalled memories rarely fill their budget), from
          // counts already made: the context's running total, the system prompt, the memories.
          const estimated =
            state.context.tokens +
            compaction.promptTokens(tokenizer, settings.bot.systemPrompt) +
            recalled.tokens;
          state.calibration = calibrate(state.calibration, estimated, reply.promptTokens);
          if (state.calibration.samples % CALIBRATION_SAVE_EVERY === 0) {
            void this.#options.channels.setCalibration(key, state.calibration).catch(() => {});
          }
        }
        return reply.text;
      } catch (err) {
        if (!isLlmError(err, 'llm_context_overflow') || attempt >= MAX_OVERFLOW_RETRIES) throw err;
        // The provider counts more than we do: cut now, calibrate up, and try again.
        state.calibration = {
          factor: Math.min(2, state.calibration.factor * 1.1),
          samples: state.calibration.samples,
        };
        const after = await compaction.compactor.truncateNow(
          key,
          compaction.settingsOf(settings, tokenizer),
          state.calibration,
          1,
        );
        if (!after) throw err;
        state.context = new WorkingContext(after);
      }
    }
  }

  /** Memories of this channel's scope only, ranked by the store, within the recall budget; and their tokens. */
  async #recall(
    key: string,
    settings: ResolvedChannelConfig,
    tokenizer: Tokenizer,
    text: string,
  ): Promise<{ memories: Memory[]; tokens: number }> {
    const budget = settings.memory.recallMaxTokens;
    if (budget <= 0) return { memories: [], tokens: 0 };
    const found = await this.#options.memories.recall({
      scopes: [memoryScope(key, settings.memory.scope)],
      text,
      limit: RECALL_CANDIDATES,
    });
    const memories: Memory[] = [];
    let tokens = 0;
    for (const memory of found) {
      const next = chatMessageTokens(tokenizer, renderMemories([...memories, memory]));
      if (next > budget) break;
      memories.push(memory);
      tokens = next;
    }
    return { memories, tokens };
  }
}
