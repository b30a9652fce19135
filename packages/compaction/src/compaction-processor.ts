/**
 * One compaction pass, as the worker runs it:
 *
 *   run started → take-back mark → snapshot of the range → summary + memories (LLM, no lock held)
 *   → memories validated → checkpoint → memories upserted → splice under the channel lock (or
 *   stale) → run finished → context-changed
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
 *
 * A take-back (a deletion, an edit, a forget) may land while a pass runs, for as long as it runs. The
 * pass reads the channel's take-back mark before its snapshot and checks for take-backs since then
 * over its range before every model request, after its checkpoint, after its memories and, under the
 * channel lock, at the splice (`SummaryResult.takeBackMark`). Each write is checked after it is made,
 * and the take-back's own runner erases the same copies after its commit, so one of the two always
 * sees the other. When one has landed (`TakenBackError`), the pass drops what it wrote from the old
 * snapshot (its checkpoint, the memories derived from the taken-back seqs) and starts again from the
 * redacted archive (`compaction.restarted`); after `MAX_TAKE_BACK_RESTARTS` it is deferred.
 */
import {
  type ArchiveReader,
  type CheckpointEraser,
  type CircuitBreakerOptions,
  type CompactionEventSink,
  type CompactionJob,
  type CompactionRun,
  type ContextNotifier,
  type ContextWriter,
  callsCost,
  circuitOpen,
  countOf,
  DEFAULT_CIRCUIT_BREAKER,
  EbbError,
  type ExtractedMemory,
  type LlmCall,
  type MemoryScopeSetting,
  type MemoryStore,
  type MemoryUpsertResult,
  type ModelPrice,
  memoryScope,
  PassDeferredError,
  planSnapshot,
  RUNS_LOOKBACK,
  type RunStore,
  type SeqRange,
  type SpliceOutcome,
  type StoredMessage,
  type Summarizer,
  SummarizerGaveUpError,
  type SummaryOutput,
  seqRanges,
  seqsOf,
  spanTokens,
  summarizedMessage,
  TAKEN_BACK_REASON,
  type TakeBackLog,
  TakenBackError,
  TERMINAL_RUN_STATUSES,
  type Tokenizer,
  validateMemories,
  waitsForPredecessor,
} from '@ebb/core';
import { dropDerivedMemories } from './take-back-copies.js';

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

/** How soon a deferred follow-up looks again whether the pass ahead of it landed. */
export const FOLLOW_UP_RECHECK_MS = 500;

export const FOLLOW_UP_MAX_WAIT_MS = 10 * 60_000;

/** Restarts of one try of a pass because take-backs landed while it ran; then it is deferred. */
export const MAX_TAKE_BACK_RESTARTS = 3;

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

export function createCompactionProcessor(options: CompactionProcessorOptions) {
  const p: Processor = {
    ...options,
    now: options.now ?? Date.now,
    breaker: options.breaker ?? DEFAULT_CIRCUIT_BREAKER,
    emit: options.onEvent ?? (() => {}),
  };

  return async function processCompaction(job: ProcessorJob, signal?: AbortSignal): Promise<ProcessResult> {
    const pass: Pass = { job, started: p.now(), event: passEvent(job) };
    let prices: Prices = {};
    try {
      const run = await startRun(p.runs, job);
      if (run && TERMINAL_RUN_STATUSES.has(run.status)) {
        return { kind: 'already_finished', status: run.status };
      }
      const recent = await p.runs.recent(job.channelKey, RUNS_LOOKBACK);
      if (circuitOpen(recent, job.jobId, p.breaker, p.now())) return await skipOpenCircuit(p, pass);
      // Resuming from a checkpoint (a retry, or a deferred follow-up): the summary exists, and the
      // splice checks again everything the snapshot would.
      if (run?.output === undefined) p.emit({ event: 'compaction.started', ...pass.event });

      const settings = await p.settingsFor(job.channelKey);
      prices = settings.prices ?? {};
      let checkpoint = run?.output;
      for (let restarts = 0; ; restarts++) {
        try {
          return await passFrom(p, pass, { settings, checkpoint, signal, enqueuedAt: run?.createdAt });
        } catch (err) {
          if (!(err instanceof TakenBackError)) throw err;
          await dropReadBeforeTakeBack(p, job, err.ranges);
          p.emit({ event: 'compaction.restarted', ...pass.event, reason: TAKEN_BACK_REASON });
          if (restarts + 1 >= MAX_TAKE_BACK_RESTARTS)
            throw new PassDeferredError(
              `${job.jobId}: take-backs keep landing over its range`,
              TAKE_BACK_DEFER_MS,
            );
          checkpoint = undefined;
        }
      }
    } catch (err) {
      if (!(err instanceof PassDeferredError)) reportFailure(p, pass, err, prices);
      throw err;
    }
  };
}

/** How long a pass that take-backs kept restarting waits before it tries again. */
const TAKE_BACK_DEFER_MS = 2_000;

interface PassFrom {
  readonly settings: ChannelPassSettings;
  /** The run's checkpoint to resume from, if any (stamped with the mark its snapshot was read at). */
  readonly checkpoint: SummaryOutput | undefined;
  readonly signal: AbortSignal | undefined;
  readonly enqueuedAt: number | undefined;
}

/**
 * One try of a pass from its snapshot (or its checkpoint) to its recorded outcome. Throws
 * `TakenBackError` when a take-back since the snapshot covers its range, at any step.
 */
async function passFrom(p: Processor, pass: Pass, from: PassFrom): Promise<ProcessResult> {
  const { job } = pass;
  const { settings, checkpoint, signal } = from;
  // Read before the snapshot: a take-back committed after it has a higher mark.
  const mark = checkpoint ? (checkpoint.takeBackMark ?? 0) : await p.takeBacks.takeBackMark(job.channelKey);
  const guard = takeBackGuard(p, job, mark);
  if (checkpoint) await guard();
  const snapshot = checkpoint ? EMPTY_SNAPSHOT : await snapshotRange(p.channels, job);
  if (snapshot.kind === 'stale') return await finishStaleSnapshot(p, pass, snapshot);

  const checked = memoryCheck(p, pass, settings.tokenizer);
  const output =
    checkpoint ??
    (await summarize(p, pass, { settings, snapshot, signal, mark, beforeCall: guard }, checked));
  // The stored output may be another worker's (first writer wins): checked at the older of the marks.
  const readAt = Math.min(mark, output.takeBackMark ?? 0);
  const check = readAt === mark ? guard : takeBackGuard(p, job, readAt);
  // Written, then checked: a take-back committed before the check is seen here, and one after it
  // finds what was written (its runner clears checkpoints and drops memories after its commit).
  if (!checkpoint) await check();
  // A checkpoint is JSON typed as proposed memories, and may predate the check: checked on the
  // way out too. For an output this worker just checked it changes nothing.
  const upserted = await storeMemories(p, job, settings, await checked(output.memories));
  if (upserted.added + upserted.refreshed > 0) await check();
  const spliced = await spliceSummary(p.channels, job, settings.tokenizer, {
    ...output,
    takeBackMark: readAt,
  });
  if (spliced.outcome.kind === 'stale' && spliced.outcome.reason === TAKEN_BACK_REASON) await check(true);
  return await recordOutcome(p, pass, {
    ...spliced,
    output,
    memoriesAdded: upserted.added,
    enqueuedAt: from.enqueuedAt ?? pass.started,
    prices: settings.prices ?? {},
  });
}

/**
 * Throws `TakenBackError` when a take-back since `mark` covers a seq of the job's range (`always`:
 * the splice said so under the lock; the ranges are read again for the error).
 */
function takeBackGuard(p: Processor, job: ProcessorJob, mark: number) {
  const range = { fromSeq: job.fromSeq, toSeq: job.toSeq };
  return async (always = false): Promise<void> => {
    const since = await p.takeBacks.takenBackSince(job.channelKey, mark, range);
    if (since.length === 0 && !always) return;
    const inRange = seqsOf(since.flatMap((t) => t.ranges)).filter(
      (s) => s >= range.fromSeq && s <= range.toSeq,
    );
    throw new TakenBackError(
      `${since.length} take-back(s) since mark ${mark} cover ${job.fromSeq}..${job.toSeq}`,
      inRange.length > 0 ? seqRanges(inRange) : [range],
    );
  };
}

/**
 * What a pass wrote from a snapshot a take-back has since covered: its checkpoint (and any other over
 * the range: read before it too, or not, a retry summarizes again) and the memories derived from the
 * taken-back seqs.
 */
async function dropReadBeforeTakeBack(
  p: Processor,
  job: ProcessorJob,
  ranges: readonly SeqRange[],
): Promise<void> {
  await p.runs.clearCheckpoints(job.channelKey, [{ fromSeq: job.fromSeq, toSeq: job.toSeq }]);
  await dropDerivedMemories(p, job.channelKey, ranges);
}

/** What every step of a pass uses: the processor's options with their defaults filled in. */
interface Processor extends CompactionProcessorOptions {
  readonly now: () => number;
  readonly breaker: CircuitBreakerOptions;
  readonly emit: CompactionEventSink;
}

/** One pass, as its steps see it: the job, when the pass started and the fields its every event carries. */
interface Pass {
  readonly job: ProcessorJob;
  readonly started: number;
  readonly event: ReturnType<typeof passEvent>;
}

type Prices = Readonly<Record<string, ModelPrice>>;

/** The fields every event of a pass carries: its channel (always named `channel`), tier, job and range. */
function passEvent(job: ProcessorJob) {
  return {
    channel: job.channelKey,
    tier: job.tier,
    jobId: job.jobId,
    fromSeq: job.fromSeq,
    toSeq: job.toSeq,
  };
}

/** Marks the job's run running (creating it first when the worker got the job before the bot recorded it); returns the run as it was. */
async function startRun(
  runs: Pick<RunStore, 'start' | 'create'>,
  job: ProcessorJob,
): Promise<CompactionRun | undefined> {
  const run = await runs.start(job.jobId);
  if (run) return run;
  await runs.create({ ...jobRange(job), jobId: job.jobId, usage: Number.NaN });
  return runs.start(job.jobId);
}

async function skipOpenCircuit(p: Processor, pass: Pass): Promise<ProcessResult> {
  await p.runs.finish(pass.job.jobId, { status: 'skipped', error: 'circuit_open' });
  p.emit({ event: 'compaction.skipped', ...pass.event, reason: 'circuit_open' });
  return { kind: 'skipped', reason: 'circuit_open' };
}

async function finishStaleSnapshot(
  p: Processor,
  pass: Pass,
  snapshot: Extract<Snapshot, { kind: 'stale' }>,
): Promise<ProcessResult> {
  await p.runs.finish(pass.job.jobId, {
    status: 'stale',
    error: snapshot.reason,
    durationMs: p.now() - pass.started,
  });
  p.emit({ event: 'compaction.stale', ...pass.event, reason: snapshot.reason });
  return snapshot;
}

type MemoryCheck = (proposed: SummaryOutput['memories']) => Promise<ExtractedMemory[]>;

/**
 * Memories are checked before the checkpoint holds them, and again when one is reused (a checkpoint
 * written before this check existed); a valid memory passes unchanged. The range's authors are read
 * once per pass, on the first check that has memories to check.
 */
function memoryCheck(p: Processor, pass: Pass, tokenizer: Tokenizer): MemoryCheck {
  const { job } = pass;
  let authors: Promise<string[]> | undefined;
  return async (proposed) => {
    if (proposed.length === 0) return [];
    authors ??= p.channels.readAuthors(job.channelKey, job.fromSeq, job.toSeq);
    const result = validateMemories(proposed, {
      fromSeq: job.fromSeq,
      toSeq: job.toSeq,
      authors: await authors,
      tokenizer,
    });
    if (countOf(result.rejected) + countOf(result.repaired) > 0) {
      p.emit({
        event: 'compaction.memories_invalid',
        ...pass.event,
        memoriesRejected: result.rejected,
        memoriesRepaired: result.repaired,
      });
    }
    return result.memories;
  };
}

interface SummaryInput {
  readonly settings: ChannelPassSettings;
  readonly snapshot: Extract<Snapshot, { kind: 'ok' }>;
  readonly signal: AbortSignal | undefined;
  /** The take-back mark the snapshot was read at: stamped on the checkpoint. */
  readonly mark: number;
  readonly beforeCall: () => Promise<void>;
}

/**
 * Asks the channel's summarizer and checkpoints its output with the memories checked: the first
 * worker to save its output wins and every worker on this job continues with that one.
 */
async function summarize(
  p: Processor,
  pass: Pass,
  { settings, snapshot, signal, mark, beforeCall }: SummaryInput,
  checked: MemoryCheck,
): Promise<SummaryOutput> {
  const { job } = pass;
  const proposed = await settings.summarizer.summarize(
    {
      channelKey: job.channelKey,
      fromSeq: job.fromSeq,
      toSeq: job.toSeq,
      earlierSummaries: snapshot.earlierSummaries,
      messages: snapshot.messages,
      maxTokens: settings.summaryMaxTokens,
      canWait: canWait(job),
      ...(job.focus === undefined ? {} : { focus: job.focus }),
      beforeCall,
    },
    signal,
  );
  return p.runs.saveOutput(job.jobId, {
    ...proposed,
    memories: await checked(proposed.memories),
    takeBackMark: mark,
  });
}

async function storeMemories(
  p: Processor,
  job: ProcessorJob,
  settings: ChannelPassSettings,
  memories: readonly ExtractedMemory[],
): Promise<MemoryUpsertResult> {
  const scope = memoryScope(job.channelKey, settings.memoryScope);
  return p.memories.upsert(memories.map((m) => ({ ...m, scope, channelKey: job.channelKey })));
}

/** The summary spliced over the job's range under the channel lock (or refused: stale, gap, applied already). */
async function spliceSummary(
  channels: Pick<ContextWriter, 'splice'>,
  job: ProcessorJob,
  tokenizer: Tokenizer,
  output: Pick<SummaryOutput, 'text'> & { readonly takeBackMark: number },
): Promise<{ outcome: SpliceOutcome; summaryTokens: number }> {
  const range = { fromSeq: job.fromSeq, toSeq: job.toSeq };
  const summaryTokens = spanTokens(tokenizer, { kind: 'summary', ...range, text: output.text });
  const outcome = await channels.splice(job.channelKey, {
    jobId: job.jobId,
    ...range,
    text: output.text,
    tokens: summaryTokens,
    takeBackMark: output.takeBackMark,
  });
  return { outcome, summaryTokens };
}

interface Spliced {
  readonly outcome: SpliceOutcome;
  readonly output: SummaryOutput;
  readonly summaryTokens: number;
  readonly memoriesAdded: number;
  /** When the run was created: how long a follow-up has waited for the pass ahead of it. */
  readonly enqueuedAt: number;
  readonly prices: Prices;
}

/**
 * The splice's outcome recorded on the run and reported: a follow-up that met a gap while the pass
 * ahead is still on its way is deferred; stale (or a gap with nothing left to wait for) ends the
 * run stale; a splice, or one an earlier try applied, completes it.
 */
async function recordOutcome(p: Processor, pass: Pass, spliced: Spliced): Promise<ProcessResult> {
  const { job } = pass;
  const { outcome, output } = spliced;
  const calls = runFigures(p, pass, spliced);
  if (outcome.kind === 'gap') {
    const ahead = job.after === undefined ? undefined : await p.runs.get(job.after);
    if (waitsForPredecessor(job, ahead, spliced.enqueuedAt, p.now())) {
      throw new PassDeferredError(`${job.jobId} waits for ${job.after} to splice`, FOLLOW_UP_RECHECK_MS);
    }
  }
  if (outcome.kind === 'stale' || outcome.kind === 'gap') {
    await p.runs.finish(job.jobId, { status: 'stale', error: outcome.reason, ...calls });
    p.emit({
      event: 'compaction.stale',
      ...pass.event,
      reason: outcome.reason,
      durationMs: calls.durationMs,
    });
    return { kind: 'stale', reason: outcome.reason };
  }
  // Set once the pass is recorded completed: nothing after that may fail it.
  let notifyError: string | undefined;
  if (outcome.kind === 'splice') {
    await p.runs.finish(job.jobId, {
      status: 'completed',
      tokensBefore: outcome.tokensBefore,
      tokensAfter: outcome.tokensAfter,
      ...calls,
    });
    // The pass is in Postgres: Redis away cannot undo it. Bots that miss the notice see the new
    // generation on their next append and reload then.
    notifyError = await p.notifier
      .publish({ channelKey: job.channelKey, generation: outcome.generation })
      .then(
        () => undefined,
        (err: unknown) => errorCode(err),
      );
  } else {
    // Applied by an earlier try that died before recording it.
    await p.runs.finish(job.jobId, { status: 'completed', ...calls });
  }
  p.emit({
    event: 'compaction.completed',
    ...pass.event,
    ...(outcome.kind === 'splice'
      ? {
          tokensBefore: outcome.tokensBefore,
          tokensAfter: outcome.tokensAfter,
          messagesCompacted: outcome.messagesRemoved,
        }
      : { reason: outcome.reason }),
    summaryTokens: spliced.summaryTokens,
    memoriesAdded: spliced.memoriesAdded,
    durationMs: calls.durationMs,
    fallback: output.fallback,
    model: output.model,
    ...callsCost(output.calls, spliced.prices),
    // The context-changed notice could not be sent (e.g. redis_unavailable).
    ...(notifyError === undefined ? {} : { error: notifyError }),
  });
  return { kind: 'completed', outcome, memoriesAdded: spliced.memoriesAdded, fallback: output.fallback };
}

/** What the run records of the pass's calls and summary, whatever its outcome; its duration ends now. */
function runFigures(p: Processor, pass: Pass, { output, summaryTokens, memoriesAdded }: Spliced) {
  const fallbackCause = output.fallback ? output.calls.find((c) => c.error !== undefined)?.error : undefined;
  return {
    model: output.model,
    fallback: output.fallback,
    // Why the fallback wrote the summary: the breaker counts such passes as failures.
    ...(fallbackCause === undefined ? {} : { error: fallbackCause }),
    inputTokens: output.calls.reduce((n, c) => n + c.inputTokens, 0),
    outputTokens: output.calls.reduce((n, c) => n + c.outputTokens, 0),
    summaryTokens,
    memoriesAdded,
    durationMs: p.now() - pass.started,
  };
}

/**
 * The driver retries or gives up; `recordFailure` then marks the run (see run-worker.ts). The calls
 * a summarizer made before it gave up are what the failed try cost.
 */
function reportFailure(p: Processor, pass: Pass, err: unknown, prices: Prices): void {
  const spent =
    err instanceof SummarizerGaveUpError && err.calls.length > 0
      ? { model: (err.calls.at(-1) as LlmCall).model, ...callsCost(err.calls, prices) }
      : {};
  p.emit({
    event: 'compaction.failed',
    ...pass.event,
    error: errorCode(err),
    durationMs: p.now() - pass.started,
    ...spent,
  });
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
export async function recordFailure(
  runs: Pick<RunStore, 'finish'>,
  jobId: string,
  err: unknown,
): Promise<void> {
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

const EMPTY_SNAPSHOT = { kind: 'ok', earlierSummaries: [], messages: [] } as const satisfies Snapshot;

type Snapshot =
  | { kind: 'ok'; earlierSummaries: string[]; messages: StoredMessage[] }
  | { kind: 'stale'; reason: string };

/** The snapshot `planSnapshot` describes, with the archive parts read from the store. */
async function snapshotRange(channels: ArchiveReader, job: ProcessorJob): Promise<Snapshot> {
  const plan = planSnapshot(await channels.loadPrefix(job.channelKey), job);
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
