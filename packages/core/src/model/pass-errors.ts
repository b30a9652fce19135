/**
 * The two errors that end a compaction pass's step with what the pass knows (the core's other errors,
 * which know nothing of passes, are `support/errors.ts`'s): a take-back came after the pass's
 * snapshot (`TakenBackError`, with the ranges it covers), and the summarizer gave up rather than
 * fall back (`SummarizerGaveUpError`, with the model calls made on the way).
 */
import type { LlmCall } from '../ports/model-ports.js';
import { CoreError, EbbError } from '../support/errors.js';
import type { SeqRange } from './model.js';

/**
 * A take-back recorded after a pass read its snapshot covers a seq of the pass's range: nothing the
 * pass learned from that snapshot may be sent to a model, checkpointed, stored or spliced. The pass
 * reads the redacted archive again (`compaction-processor.ts`); it never reaches the job driver
 * unless take-backs keep coming, and then as a deferral.
 */
export class TakenBackError extends CoreError {
  /** The seqs the take-backs since the snapshot cover, within the pass's range. */
  readonly ranges: readonly SeqRange[];

  constructor(message: string, ranges: readonly SeqRange[]) {
    super(message, { code: 'taken_back', retryable: true });
    this.ranges = ranges;
  }
}

/**
 * The summarizer gave up on a pass instead of writing the extractive fallback: the provider failed
 * in a way that can pass and the channel can wait (`SummarizeInput.canWait`), or the provider
 * refused us (a bad key, no quota), which a fallback would hide. `code` and `retryable` are the
 * provider error's; `calls` are the model calls made on the way (metrics count them);
 * `retryAfterMs` is the wait the provider asked for (a rate limit): the job driver puts the job
 * back for that long without spending an attempt.
 */
export class SummarizerGaveUpError extends EbbError {
  readonly calls: readonly LlmCall[];
  readonly retryAfterMs: number | undefined;

  constructor(cause: EbbError & { readonly retryAfterMs?: number | undefined }, calls: readonly LlmCall[]) {
    super(`the summarizer gave up: ${cause.message}`, {
      code: cause.code,
      retryable: cause.retryable,
      cause,
    });
    this.calls = calls;
    this.retryAfterMs = cause.retryAfterMs;
  }
}
