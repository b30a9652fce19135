/**
 * `TurnLog` in memory, a part of `InMemoryChannelStore`: appends (idempotent on the platform id,
 * fenced as `PgChannelStore` fences them) and the working context and calibration read back. Works on
 * the store's `InMemoryChannels` (`in-memory-channel-state.ts`).
 */

import type { ContextView, StoredMessage } from '../model/model.js';
import { type Calibration, UNCALIBRATED } from '../model/tokens.js';
import { contextCopyOf, measuredCopy } from '../plans/plan-message-rewrite.js';
import { checkedFence, FencedAppendError } from '../ports/append-fence.js';
import type {
  AppendOptions,
  AppendResult,
  ContextDelta,
  LoadedChannel,
  NewMessage,
  TurnLog,
} from '../ports/ports.js';
import { InvariantError } from '../support/errors.js';
import { EMPTY_VIEW, type InMemoryChannels } from './in-memory-channel-state.js';

export class InMemoryTurnLog implements TurnLog {
  readonly #channels: InMemoryChannels;

  constructor(channels: InMemoryChannels) {
    this.#channels = channels;
  }

  async append(channelKey: string, message: NewMessage, options: AppendOptions = {}): Promise<AppendResult> {
    const fence = checkedFence(options.fence);
    this.#admit(channelKey, fence);
    return this.#append(channelKey, message, fence);
  }

  async appendAll(
    channelKey: string,
    messages: readonly NewMessage[],
    options: AppendOptions = {},
  ): Promise<AppendResult[]> {
    if (messages.some((m) => m.platformMessageId !== undefined)) {
      throw new InvariantError(
        'appendAll takes messages without a platform id (a tool call and its results)',
      );
    }
    const fence = checkedFence(options.fence);
    this.#admit(channelKey, fence);
    // Synchronously, in one go: no other call can run between them.
    return messages.map((message) => this.#append(channelKey, message, fence));
  }

  /** Refuses a fence lower than the channel's, before anything is stored (a redelivery too). */
  #admit(channelKey: string, fence: number | undefined): void {
    const stored = this.#channels.get(channelKey)?.fence ?? 0;
    if (fence !== undefined && fence < stored) throw new FencedAppendError(channelKey, fence, stored);
  }

  #append(channelKey: string, message: NewMessage, fence: number | undefined): AppendResult {
    const channel = this.#channels.getOrCreate(channelKey);
    const { context } = channel;
    const id = message.platformMessageId;
    const existing = id === undefined ? undefined : channel.platformIds.get(id);
    if (existing !== undefined) {
      return {
        seq: existing,
        inserted: false,
        generation: context.generation,
        contextTokens: context.tokens,
        headSeq: context.headSeq,
      };
    }
    const seq = context.headSeq + 1;
    const base = {
      seq,
      role: message.role,
      author: message.author,
      ...(message.ts === undefined ? {} : { ts: message.ts }),
      ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((c) => ({ ...c })) }),
      ...(message.toolCallId === undefined ? {} : { toolCallId: message.toolCallId }),
    };
    const archived: StoredMessage = { ...base, text: message.text, tokens: message.tokens };
    context.append(contextCopyOf(archived, measuredCopy(message)));
    channel.archive.push(archived);
    if (id !== undefined) channel.platformIds.set(id, seq);
    if (message.recalledMemories?.length) channel.recalled.set(seq, [...message.recalledMemories]);
    channel.archivedAt.set(seq, Date.now());
    if (fence !== undefined) channel.fence = fence;
    return {
      seq,
      inserted: true,
      generation: context.generation,
      contextTokens: context.tokens,
      headSeq: seq,
    };
  }

  async loadContext(channelKey: string): Promise<ContextView> {
    return this.#channels.viewOf(channelKey);
  }

  async loadAfter(channelKey: string, afterSeq: number): Promise<ContextDelta> {
    const { generation, headSeq, tokens, raw } = this.#channels.get(channelKey)?.context.view() ?? EMPTY_VIEW;
    return { generation, headSeq, tokens, raw: raw.filter((m) => m.seq > afterSeq) };
  }

  async loadChannel(channelKey: string): Promise<LoadedChannel> {
    return {
      context: this.#channels.viewOf(channelKey),
      calibration: this.#channels.get(channelKey)?.calibration ?? UNCALIBRATED,
    };
  }

  async generation(channelKey: string): Promise<number> {
    return this.#channels.get(channelKey)?.context.generation ?? 0;
  }

  async calibration(channelKey: string): Promise<Calibration> {
    return this.#channels.get(channelKey)?.calibration ?? UNCALIBRATED;
  }

  async setCalibration(channelKey: string, calibration: Calibration): Promise<void> {
    this.#channels.getOrCreate(channelKey).calibration = {
      factor: calibration.factor,
      samples: calibration.samples,
    };
  }
}
