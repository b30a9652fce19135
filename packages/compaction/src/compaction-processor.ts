/**
 * One compaction pass, as the worker runs it:
 *
 *   run started → snapshot of the range → summary + memories (LLM, no lock held) → memories
 *   validated → checkpoint → memories upserted → splice under the channel lock (or stale) → run
 *   finished → context-changed
 *
 * The summarizer's memories are proposals (model output, shaped by whatever the channel said):
 * `validateMemories` repairs or rejects them against the pass's range and the range's authors before
 * they are checkpointed or stored, and one `compaction.memories_invalid` event per pass counts what
 * it did by reason (never the text).
 *
 * Every step is idempotent, so a job killed anywhere and retried ends in the same state once: a run
 * that finished already is left alone; a checkpointed summary is reused instead of asking the LLM
 * again, so the memories it writes have the same fingerprints; a splice of a job already applied is
 * a no-op. A channel whose last passes all failed is paused for a while (circuit breaker).
 *
 * A follow-up pass (`after`: the pass whose range ends right before its own) may finish first; its
 * splice then meets a gap in the prefix. While the pass ahead is still queued or running, the job is
 * deferred (`PassDeferredError`: the driver runs it again shortly without spending an attempt, and
 * the checkpoint spares a second LLM call); once that pass ended without landing, the follow-up is
 * stale and its messages stay raw for the next pass.
 */
import {
  type ChannelStore,
  type CompactionEventSink,
  type CompactionJob,
  type CompactionRun,
  type ContextNotifier,
  callsCost,
  countOf,
  EbbError,
  type ExtractedMemory,
  FINISHED_RUN_STATUSES,
  type LlmCall,
  type MemoryScopeSetting,
  type MemoryStore,
  type ModelPrice,
  memoryScope,
  PassDeferredError,
  type PrefixView,
  planSnapshot,
  type RunStore,
  type SpliceOutcome,
  type StoredMessage,
  type Summarizer,
  SummarizerGaveUpError,
  type SummaryOutput,
  spanTokens,
  summarizedMessage,
  TERMINAL_RUN_STATUSES,
  type Tokenizer,
  validateMemories,
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

export interface CircuitBreakerOptions {
  /**
   * This many failed runs in a row open the breaker; a pass the extractive fallback completed
   * because the LLM failed counts as failed here (a provider that is down is down for every pass).
   */
  readonly failures: number;
  /** For this long after the last failure. */
  readonly pauseMs: number;
}

/** How soon a deferred follow-up looks again whether the pass ahead of it landed. */
export const FOLLOW_UP_RECHECK_MS = 500;
/** A follow-up waits at most this long (from its enqueue) for the pass ahead of it; then it is stale. */
export const FOLLOW_UP_MAX_WAIT_MS = 10 * 60_000;

export const DEFAULT_CIRCUIT_BREAKER = {
  failures: 3,
  pauseMs: 10 * 60_000,
} as const satisfies CircuitBreakerOptions;

export interface CompactionProcessorOptions {
  readonly channels: ChannelStore;
  readonly memories: MemoryStore;
  readonly runs: RunStore;
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

export function createCompactionProcessor(options: CompactionProcessorOptions) {
  const now = options.now ?? Date.now;
  const breaker = options.breaker ?? DEFAULT_CIRCUIT_BREAKER;
  const emit = options.onEvent ?? (() => {});

  return async function processCompaction(job: ProcessorJob, signal?: AbortSignal): Promise<ProcessResult> {
    const { channels, memories, runs } = options;
    const started = now();
    const channel = job.channelKey;
    const event = { channel, tier: job.tier, jobId: job.jobId, fromSeq: job.fromSeq, toSeq: job.toSeq };
    let prices: Readonly<Record<string, ModelPrice>> = {};

    try {
      let run = await runs.start(job.jobId);
      if (!run) {
        // The worker got the job before the bot recorded it.
        await runs.create({ ...jobRange(job), jobId: job.jobId, usage: Number.NaN });
        run = await runs.start(job.jobId);
      }
      if (run && TERMINAL_RUN_STATUSES.has(run.status)) {
        return { kind: 'already_finished', status: run.status };
      }
      if (await circuitOpen(runs, channel, job.jobId, breaker, now())) {
        await runs.finish(job.jobId, { status: 'skipped', error: 'circuit_open' });
        emit({ event: 'compaction.skipped', ...event, reason: 'circuit_open' });
        return { kind: 'skipped', reason: 'circuit_open' };
      }
      // Resuming from a checkpoint (a retry, or a deferred follow-up): the summary exists, and the
      // splice checks again everything the snapshot would.
      const resumed = run?.output !== undefined;
      if (!resumed) emit({ event: 'compaction.started', ...event });

      const settings = await options.settingsFor(channel);
      prices = settings.prices ?? {};
      const snapshot = resumed
        ? EMPTY_SNAPSHOT
        : await snapshotRange(channels, await channels.loadPrefix(channel), job);
      if (snapshot.kind === 'stale') {
        await runs.finish(job.jobId, {
          status: 'stale',
          error: snapshot.reason,
          durationMs: now() - started,
        });
        emit({ event: 'compaction.stale', ...event, reason: snapshot.reason });
        return snapshot;
      }

      // Memories are checked before the checkpoint holds them, and again when one is reused (a
      // checkpoint written before this check existed); a valid memory passes unchanged.
      let authors: Promise<string[]> | undefined;
      const checked = async (proposed: SummaryOutput['memories']): Promise<ExtractedMemory[]> => {
        if (proposed.length === 0) return [];
        authors ??= channels.readAuthors(channel, job.fromSeq, job.toSeq);
        const result = validateMemories(proposed, {
          fromSeq: job.fromSeq,
          toSeq: job.toSeq,
          authors: await authors,
          tokenizer: settings.tokenizer,
        });
        if (countOf(result.rejected) + countOf(result.repaired) > 0) {
          emit({
            event: 'compaction.memories_invalid',
            ...event,
            memoriesRejected: result.rejected,
            memoriesRepaired: result.repaired,
          });
        }
        return result.memories;
      };
      // A checkpointed output is reused; otherwise the first worker to save its output wins and
      // every worker on this job continues with that one.
      let output: SummaryOutput | undefined = run?.output;
      if (output === undefined) {
        const proposed = await settings.summarizer.summarize(
          {
            channelKey: channel,
            fromSeq: job.fromSeq,
            toSeq: job.toSeq,
            earlierSummaries: snapshot.earlierSummaries,
            messages: snapshot.messages,
            maxTokens: settings.summaryMaxTokens,
            canWait: canWait(job),
            ...(job.focus === undefined ? {} : { focus: job.focus }),
          },
          signal,
        );
        output = await runs.saveOutput(job.jobId, {
          ...proposed,
          memories: await checked(proposed.memories),
        });
      }

      const scope = memoryScope(channel, settings.memoryScope);
      // A checkpoint is JSON typed as proposed memories, and may predate the check: checked on the
      // way out too. For an output this worker just checked it changes nothing.
      const upserted = await memories.upsert(
        (await checked(output.memories)).map((m) => ({ ...m, scope, channelKey: channel })),
      );

      const tokens = spanTokens(settings.tokenizer, {
        kind: 'summary',
        fromSeq: job.fromSeq,
        toSeq: job.toSeq,
        text: output.text,
      });
      const outcome = await channels.splice(channel, {
        jobId: job.jobId,
        fromSeq: job.fromSeq,
        toSeq: job.toSeq,
        text: output.text,
        tokens,
      });
      const fallbackCause = output.fallback
        ? output.calls.find((c) => c.error !== undefined)?.error
        : undefined;
      const calls = {
        model: output.model,
        fallback: output.fallback,
        // Why the fallback wrote the summary: the breaker counts such passes as failures.
        ...(fallbackCause === undefined ? {} : { error: fallbackCause }),
        inputTokens: output.calls.reduce((n, c) => n + c.inputTokens, 0),
        outputTokens: output.calls.reduce((n, c) => n + c.outputTokens, 0),
        summaryTokens: tokens,
        memoriesAdded: upserted.added,
        durationMs: now() - started,
      };
      if (outcome.kind === 'gap') {
        if (await waitsForPredecessor(runs, job, run?.createdAt ?? started, now())) {
          throw new PassDeferredError(`${job.jobId} waits for ${job.after} to splice`, FOLLOW_UP_RECHECK_MS);
        }
      }
      if (outcome.kind === 'stale' || outcome.kind === 'gap') {
        await runs.finish(job.jobId, { status: 'stale', error: outcome.reason, ...calls });
        emit({ event: 'compaction.stale', ...event, reason: outcome.reason, durationMs: calls.durationMs });
        return { kind: 'stale', reason: outcome.reason };
      }
      // Set once the pass is recorded completed: nothing after that may fail it.
      let notifyError: string | undefined;
      if (outcome.kind === 'splice') {
        await runs.finish(job.jobId, {
          status: 'completed',
          tokensBefore: outcome.tokensBefore,
          tokensAfter: outcome.tokensAfter,
          ...calls,
        });
        // The pass is in Postgres: Redis away cannot undo it. Bots that miss the notice see the new
        // generation on their next append and reload then.
        notifyError = await options.notifier
          .publish({ channelKey: channel, generation: outcome.generation })
          .then(
            () => undefined,
            (err: unknown) => errorCode(err),
          );
      } else {
        // Applied by an earlier try that died before recording it.
        await runs.finish(job.jobId, { status: 'completed', ...calls });
      }
      emit({
        event: 'compaction.completed',
        ...event,
        ...(outcome.kind === 'splice'
          ? {
              tokensBefore: outcome.tokensBefore,
              tokensAfter: outcome.tokensAfter,
              messagesCompacted: outcome.messagesRemoved,
            }
          : { reason: outcome.reason }),
        summaryTokens: tokens,
        memoriesAdded: upserted.added,
        durationMs: calls.durationMs,
        fallback: output.fallback,
        model: output.model,
        ...callsCost(output.calls, prices),
        // The context-changed notice could not be sent (e.g. redis_unavailable).
        ...(notifyError === undefined ? {} : { error: notifyError }),
      });
      return { kind: 'completed', outcome, memoriesAdded: upserted.added, fallback: output.fallback };
    } catch (err) {
      if (err instanceof PassDeferredError) throw err;
      // The driver retries or gives up; `recordFailure` then marks the run (see run-worker.ts).
      // The calls a summarizer made before it gave up are what the failed try cost.
      const spent =
        err instanceof SummarizerGaveUpError && err.calls.length > 0
          ? { model: (err.calls.at(-1) as LlmCall).model, ...callsCost(err.calls, prices) }
          : {};
      emit({
        event: 'compaction.failed',
        ...event,
        error: errorCode(err),
        durationMs: now() - started,
        ...spent,
      });
      throw err;
    }
  };
}

/** The code of the first `EbbError` in the error or its causes (drivers wrap errors, e.g. BullMQ's UnrecoverableError). */
export function errorCode(err: unknown): string {
  for (
    let e: unknown = err, depth = 0;
    e !== undefined && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (e instanceof EbbError) return e.code;
    if (typeof e !== 'object' || e === null) break;
  }
  return 'internal_error';
}

/**
 * After the driver's last try of a job failed: the run is marked failed (this feeds the circuit
 * breaker), unless it ended already. The driver also reports a job whose pass completed when only
 * its own Redis steps after it failed (BullMQ's move to completed, with Redis away or restarted
 * empty): such a run stays `completed`.
 */
export async function recordFailure(runs: RunStore, jobId: string, err: unknown): Promise<void> {
  await runs.finish(jobId, { status: 'failed', error: errorCode(err) }, { onlyFrom: ['queued', 'running'] });
}

/**
 * Whether the pass may wait for the LLM rather than land on the extractive fallback now: only a
 * background pass (the channel is below the aggressive threshold) with tries left. A higher tier, or
 * the last try, takes the fallback so the channel shrinks.
 */
function canWait(job: ProcessorJob): boolean {
  return job.tier === 'background' && job.lastAttempt === false;
}

function jobRange(job: ProcessorJob) {
  return {
    channelKey: job.channelKey,
    tier: job.tier,
    fromSeq: job.fromSeq,
    toSeq: job.toSeq,
    generation: job.generation,
    ...(job.focus === undefined ? {} : { focus: job.focus }),
    ...(job.after === undefined ? {} : { after: job.after }),
  };
}

/** Whether a follow-up should wait: the pass ahead of it is still queued or running, and not for too long. */
async function waitsForPredecessor(
  runs: RunStore,
  job: ProcessorJob,
  enqueuedAt: number,
  now: number,
): Promise<boolean> {
  if (job.after === undefined || now - enqueuedAt > FOLLOW_UP_MAX_WAIT_MS) return false;
  const ahead = await runs.get(job.after);
  return ahead !== undefined && !FINISHED_RUN_STATUSES.has(ahead.status);
}

const EMPTY_SNAPSHOT = { kind: 'ok', earlierSummaries: [], messages: [] } as const satisfies Snapshot;

type Snapshot =
  | { kind: 'ok'; earlierSummaries: string[]; messages: StoredMessage[] }
  | { kind: 'stale'; reason: string };

/** The snapshot `planSnapshot` describes, with the archive parts read from the store. */
async function snapshotRange(
  channels: ChannelStore,
  prefix: PrefixView,
  job: ProcessorJob,
): Promise<Snapshot> {
  const plan = planSnapshot(prefix, job);
  if (plan.kind === 'stale') return plan;
  const earlierSummaries: string[] = [];
  const messages: StoredMessage[] = [];
  for (const part of plan.parts) {
    if (part.kind === 'summary') earlierSummaries.push(part.text);
    else {
      // A stubbed tool result is summarized as its stub: microcompaction already judged it.
      const archived = await channels.readArchive(job.channelKey, part.fromSeq, part.toSeq);
      for (const message of archived) messages.push(summarizedMessage(message));
    }
  }
  return { kind: 'ok', earlierSummaries, messages };
}

/**
 * Open when the channel's last `failures` attempted passes (completed, stale or failed; skipped runs
 * are not attempts) all failed, or were completed by the fallback because the LLM failed, and the
 * newest of them is younger than the pause.
 */
async function circuitOpen(
  runs: RunStore,
  channelKey: string,
  jobId: string,
  breaker: CircuitBreakerOptions,
  now: number,
): Promise<boolean> {
  const attempted = (await runs.recent(channelKey, BREAKER_LOOKBACK))
    .filter((r) => r.jobId !== jobId && ATTEMPTED.has(r.status) && r.finishedAt !== undefined)
    .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0))
    .slice(0, breaker.failures);
  if (attempted.length < breaker.failures || !attempted.every(failedPass)) return false;
  return now - (attempted[0]?.finishedAt ?? 0) < breaker.pauseMs;
}

const ATTEMPTED: ReadonlySet<string> = new Set(['completed', 'stale', 'failed']);

function failedPass(run: CompactionRun): boolean {
  return (
    run.status === 'failed' ||
    (run.status === 'completed' && run.fallback === true && run.error !== undefined)
  );
}
/** How many recent runs the breaker looks through for the attempted ones. */
const BREAKER_LOOKBACK = 50;
