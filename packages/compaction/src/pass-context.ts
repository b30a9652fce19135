/**
 * What every step of a compaction pass sees: the job as the driver hands it over, the channel's
 * settings, the processor's options (and, as `Processor`, with their defaults filled in), one pass as
 * its steps see it and what a pass returns. `compaction-processor.ts` runs the steps and re-exports
 * the public types; the `pass-*.ts` modules beside it are the steps.
 */
import type {
  ArchiveReader,
  CheckpointEraser,
  CircuitBreakerOptions,
  CompactionEventSink,
  CompactionJob,
  ContextNotifier,
  ContextWriter,
  MemoryScopeSetting,
  MemoryStore,
  ModelPrice,
  RunStore,
  SpliceOutcome,
  Summarizer,
  TakeBackLog,
  Tokenizer,
} from '@ebb/core';

export interface ProcessorJob extends CompactionJob {
  readonly jobId: string;
  /** 1 for the first try. */
  readonly attempt: number;
  /** No try follows if this one fails (default true: callers that do not retry). */
  readonly lastAttempt?: boolean;
}

/** What a pass needs to know about its channel (from config.toml, resolved per channel). */
export interface ChannelPassSettings {
  readonly summaryMaxTokens: number;
  readonly memoryScope: MemoryScopeSetting;
  /** The chat model's tokenizer: the summary span is counted as the chat model will see it. */
  readonly tokenizer: Tokenizer;
  /** The channel's summarizer (its summarizer model, or the extractive one offline). */
  readonly summarizer: Summarizer;
  /** `[prices]`: the cost of a pass's calls on its `compaction.completed`/`failed` line (none: unpriced). */
  readonly prices?: Readonly<Record<string, ModelPrice>>;
}

export interface CompactionProcessorOptions {
  readonly channels: ArchiveReader & Pick<ContextWriter, 'splice'>;
  readonly memories: MemoryStore;
  readonly runs: RunStore & CheckpointEraser;
  /** The channel's take-backs: what the pass checks what it read against. */
  readonly takeBacks: Pick<TakeBackLog, 'takeBackMark' | 'takenBackSince'>;
  readonly notifier: ContextNotifier;
  readonly settingsFor: (channelKey: string) => Promise<ChannelPassSettings>;
  readonly breaker?: CircuitBreakerOptions;
  readonly now?: () => number;
  readonly onEvent?: CompactionEventSink;
}

export type ProcessResult =
  | {
      readonly kind: 'completed';
      readonly outcome: SpliceOutcome;
      readonly memoriesAdded: number;
      readonly fallback: boolean;
    }
  | { readonly kind: 'stale'; readonly reason: string }
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'already_finished'; readonly status: string };

/** What every step of a pass uses: the processor's options with their defaults filled in. */
export interface Processor extends CompactionProcessorOptions {
  readonly now: () => number;
  readonly breaker: CircuitBreakerOptions;
  readonly emit: CompactionEventSink;
}

/** One pass, as its steps see it: the job, when the pass started and the fields its every event carries. */
export interface Pass {
  readonly job: ProcessorJob;
  readonly started: number;
  readonly event: ReturnType<typeof passEvent>;
}

export type Prices = Readonly<Record<string, ModelPrice>>;

/** The fields every event of a pass carries: its channel (always named `channel`), tier, job and range. */
export function passEvent(job: ProcessorJob) {
  return {
    channel: job.channelKey,
    tier: job.tier,
    jobId: job.jobId,
    fromSeq: job.fromSeq,
    toSeq: job.toSeq,
  };
}
