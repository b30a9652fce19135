/**
 * `ArchiveReader` and `ChannelDirectory` in memory, parts of `InMemoryChannelStore`: what a pass, the
 * history tools, a take-back and the retention sweep read of a channel's archive and prefix, and every
 * channel's counters for operators. Read-only over the store's `InMemoryChannels`
 * (`in-memory-channel-state.ts`).
 */

import { messageTime } from '../model/message-time.js';
import type { PrefixView, StoredMessage } from '../model/model.js';
import { isThreadKeyOf } from '../model/platform.js';
import { UNCALIBRATED } from '../model/tokens.js';
import { REDACTED_MESSAGE } from '../plans/plan-redaction.js';
import type {
  ArchiveReader,
  ArchiveTime,
  ChannelDirectory,
  ChannelSummary,
  HeldMessage,
} from '../ports/ports.js';
import { EMPTY_VIEW, type InMemoryChannels } from './in-memory-channel-state.js';

export class InMemoryArchiveReader implements ArchiveReader {
  readonly #channels: InMemoryChannels;

  constructor(channels: InMemoryChannels) {
    this.#channels = channels;
  }

  async loadPrefix(channelKey: string): Promise<PrefixView> {
    const view = this.#channels.get(channelKey)?.context.view();
    if (!view) return { generation: 0, headSeq: 0, spans: [] };
    return { generation: view.generation, headSeq: view.headSeq, spans: [...view.spans] };
  }

  async readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
    const archive = this.#channels.get(channelKey)?.archive ?? [];
    return archive.slice(Math.max(0, fromSeq - 1), Math.max(0, toSeq));
  }

  async readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]> {
    const authors = new Set((await this.readArchive(channelKey, fromSeq, toSeq)).map((m) => m.author));
    return [...authors].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async findInThreads(channelKey: string, platformMessageIds: readonly string[]): Promise<HeldMessage[]> {
    const wanted = [...new Set(platformMessageIds)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return [...this.#channels.keys()]
      .filter((key) => isThreadKeyOf(key, channelKey))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap((key) => {
        const ids = this.#channels.get(key)?.platformIds;
        return wanted
          .filter((id) => ids?.has(id))
          .map((platformMessageId) => ({ channelKey: key, platformMessageId }));
      });
  }

  async findRecalling(channelKey: string, memoryIds: readonly string[]): Promise<number[]> {
    const wanted = new Set(memoryIds);
    return [...(this.#channels.get(channelKey)?.recalled ?? [])]
      .filter(([, ids]) => ids.some((id) => wanted.has(id)))
      .map(([seq]) => seq)
      .sort((a, b) => a - b);
  }

  async archiveTimes(channelKey: string, afterSeq: number, limit: number): Promise<ArchiveTime[]> {
    const channel = this.#channels.get(channelKey);
    if (!channel) return [];
    return channel.archive
      .filter((m) => m.seq > afterSeq)
      .slice(0, Math.max(0, limit))
      .map((m) => ({
        seq: m.seq,
        at: messageTime(m.ts) ?? channel.archivedAt.get(m.seq) ?? 0,
        taken: m.text === REDACTED_MESSAGE,
      }));
  }
}

export class InMemoryChannelDirectory implements ChannelDirectory {
  readonly #channels: InMemoryChannels;

  constructor(channels: InMemoryChannels) {
    this.#channels = channels;
  }

  async listChannels(): Promise<ChannelSummary[]> {
    return [...this.#channels.keys()]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((key) => this.#summaryOf(key));
  }

  async channelSummary(channelKey: string): Promise<ChannelSummary | undefined> {
    return this.#channels.has(channelKey) ? this.#summaryOf(channelKey) : undefined;
  }

  #summaryOf(key: string): ChannelSummary {
    const channel = this.#channels.get(key);
    const { generation, headSeq, tokens } = channel?.context.view() ?? EMPTY_VIEW;
    const microcompaction = { stubbed: 0, tokensSaved: 0, ...channel?.microcompaction };
    const calibration = channel?.calibration ?? UNCALIBRATED;
    return { key, headSeq, generation, tokens, microcompaction, calibration };
  }
}
