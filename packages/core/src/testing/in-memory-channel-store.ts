/**
 * The channel ports in memory, for tests: the same semantics as `PgChannelStore`
 * (one contract suite runs against both), no I/O. Each call runs to completion before the next
 * starts, so the channel lock of the Postgres store has nothing to guard here.
 *
 * One class, the store its callers construct (and tests subclass), made of one part per port role,
 * all on the same channels (`in-memory-channel-state.ts`):
 *
 * - `in-memory-turn-log.ts`: `TurnLog`, appends and the working context read back.
 * - `in-memory-archive-reader.ts`: `ArchiveReader` and `ChannelDirectory`, the reads.
 * - `in-memory-context-writer.ts`: `ContextWriter`, compaction's splice, truncation and stubs.
 * - `in-memory-forgetting.ts`: `Forgetting` and `PlatformChanges`, taking things back.
 * - `in-memory-take-back-log.ts`: the take-backs those record (`takeBacks`).
 */

import type { ContextView, PrefixView, SeqRange, StoredMessage } from '../model/model.js';
import type { Calibration } from '../model/tokens.js';
import type { SummaryResult } from '../plans/plan-splice.js';
import type { NewTakeBack } from '../plans/take-back.js';
import type {
  AppendOptions,
  AppendResult,
  ArchiveReader,
  ArchiveTime,
  AuthoredSeqs,
  ChannelDirectory,
  ChannelSummary,
  ContextDelta,
  ContextWriter,
  EarlierSummary,
  EditMessageOutcome,
  Forgetting,
  HeldMessage,
  LoadedChannel,
  MessageEdit,
  NewMessage,
  PlatformChanges,
  PlatformSeq,
  RedactArchiveOutcome,
  ReplaceSummaryOutcome,
  SpliceOutcome,
  StubOutcome,
  StubRequest,
  SummaryReplacement,
  TruncationOutcome,
  TruncationRequest,
  TurnLog,
} from '../ports/ports.js';
import { InMemoryArchiveReader, InMemoryChannelDirectory } from './in-memory-archive-reader.js';
import { InMemoryChannels } from './in-memory-channel-state.js';
import { InMemoryContextWriter } from './in-memory-context-writer.js';
import { InMemoryForgetting } from './in-memory-forgetting.js';
import { InMemoryTakeBackLog } from './in-memory-take-back-log.js';
import { InMemoryTurnLog } from './in-memory-turn-log.js';

export class InMemoryChannelStore
  implements TurnLog, ArchiveReader, ContextWriter, Forgetting, PlatformChanges, ChannelDirectory
{
  /** The take-backs `redactArchive` and `editMessage` record, as Postgres records them in their transaction. */
  readonly takeBacks: InMemoryTakeBackLog;
  readonly #turns: InMemoryTurnLog;
  readonly #reader: InMemoryArchiveReader;
  readonly #writer: InMemoryContextWriter;
  readonly #forgetting: InMemoryForgetting;
  readonly #directory: InMemoryChannelDirectory;

  constructor(options: { readonly takeBacks?: InMemoryTakeBackLog } = {}) {
    this.takeBacks = options.takeBacks ?? new InMemoryTakeBackLog();
    const channels = new InMemoryChannels();
    this.#turns = new InMemoryTurnLog(channels);
    this.#reader = new InMemoryArchiveReader(channels);
    this.#writer = new InMemoryContextWriter(channels, this.takeBacks);
    this.#forgetting = new InMemoryForgetting(channels, this.takeBacks);
    this.#directory = new InMemoryChannelDirectory(channels);
  }

  // TurnLog

  append(channelKey: string, message: NewMessage, options?: AppendOptions): Promise<AppendResult> {
    return this.#turns.append(channelKey, message, options);
  }

  appendAll(
    channelKey: string,
    messages: readonly NewMessage[],
    options?: AppendOptions,
  ): Promise<AppendResult[]> {
    return this.#turns.appendAll(channelKey, messages, options);
  }

  loadContext(channelKey: string): Promise<ContextView> {
    return this.#turns.loadContext(channelKey);
  }

  loadAfter(channelKey: string, afterSeq: number): Promise<ContextDelta> {
    return this.#turns.loadAfter(channelKey, afterSeq);
  }

  loadChannel(channelKey: string): Promise<LoadedChannel> {
    return this.#turns.loadChannel(channelKey);
  }

  generation(channelKey: string): Promise<number> {
    return this.#turns.generation(channelKey);
  }

  calibration(channelKey: string): Promise<Calibration> {
    return this.#turns.calibration(channelKey);
  }

  setCalibration(channelKey: string, calibration: Calibration): Promise<void> {
    return this.#turns.setCalibration(channelKey, calibration);
  }

  // ArchiveReader

  loadPrefix(channelKey: string): Promise<PrefixView> {
    return this.#reader.loadPrefix(channelKey);
  }

  readArchive(channelKey: string, fromSeq: number, toSeq: number): Promise<StoredMessage[]> {
    return this.#reader.readArchive(channelKey, fromSeq, toSeq);
  }

  readAuthors(channelKey: string, fromSeq: number, toSeq: number): Promise<string[]> {
    return this.#reader.readAuthors(channelKey, fromSeq, toSeq);
  }

  findInThreads(channelKey: string, platformMessageIds: readonly string[]): Promise<HeldMessage[]> {
    return this.#reader.findInThreads(channelKey, platformMessageIds);
  }

  findRecalling(channelKey: string, memoryIds: readonly string[]): Promise<number[]> {
    return this.#reader.findRecalling(channelKey, memoryIds);
  }

  archiveTimes(channelKey: string, afterSeq: number, limit: number): Promise<ArchiveTime[]> {
    return this.#reader.archiveTimes(channelKey, afterSeq, limit);
  }

  // ContextWriter

  splice(channelKey: string, result: SummaryResult): Promise<SpliceOutcome> {
    return this.#writer.splice(channelKey, result);
  }

  truncate(channelKey: string, request: TruncationRequest): Promise<TruncationOutcome> {
    return this.#writer.truncate(channelKey, request);
  }

  stubToolResults(channelKey: string, request: StubRequest): Promise<StubOutcome> {
    return this.#writer.stubToolResults(channelKey, request);
  }

  // Forgetting and PlatformChanges

  findAuthored(author: string, channelKey?: string): Promise<AuthoredSeqs[]> {
    return this.#forgetting.findAuthored(author, channelKey);
  }

  findContaining(text: string): Promise<AuthoredSeqs[]> {
    return this.#forgetting.findContaining(text);
  }

  replaceSummary(channelKey: string, replacement: SummaryReplacement): Promise<ReplaceSummaryOutcome> {
    return this.#forgetting.replaceSummary(channelKey, replacement);
  }

  redactArchive(
    channelKey: string,
    tombstones: readonly StoredMessage[],
    takeBack: NewTakeBack | undefined,
  ): Promise<RedactArchiveOutcome> {
    return this.#forgetting.redactArchive(channelKey, tombstones, takeBack);
  }

  summaryBefore(channelKey: string, fromSeq: number, beforeSeq: number): Promise<EarlierSummary | undefined> {
    return this.#forgetting.summaryBefore(channelKey, fromSeq, beforeSeq);
  }

  redactRetiredSpans(channelKey: string, ranges: readonly SeqRange[]): Promise<number> {
    return this.#forgetting.redactRetiredSpans(channelKey, ranges);
  }

  findByPlatformIds(channelKey: string, platformMessageIds: readonly string[]): Promise<PlatformSeq[]> {
    return this.#forgetting.findByPlatformIds(channelKey, platformMessageIds);
  }

  editMessage(channelKey: string, edit: MessageEdit): Promise<EditMessageOutcome> {
    return this.#forgetting.editMessage(channelKey, edit);
  }

  // ChannelDirectory

  listChannels(): Promise<ChannelSummary[]> {
    return this.#directory.listChannels();
  }

  channelSummary(channelKey: string): Promise<ChannelSummary | undefined> {
    return this.#directory.channelSummary(channelKey);
  }
}
