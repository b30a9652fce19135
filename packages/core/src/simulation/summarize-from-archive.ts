/**
 * The worker's side of a simulated pass: the summary a worker would make at job start, from the
 * in-memory archive and the extractive summarizer. `Simulation` starts its passes with it.
 */

import type { ArchivedMessage, ContextView } from '../model/model.js';
import type { Tokenizer } from '../model/tokens.js';
import { summarizeExtractive } from '../plans/extractive-summary.js';
import type { CompactionPlan } from '../plans/plan-compaction.js';
import { planSnapshot } from '../plans/plan-snapshot.js';
import type { SummaryResult } from '../plans/plan-splice.js';
import { spanTokens } from '../rendering/render-context.js';
import { InvariantError } from '../support/errors.js';

export interface ArchiveSummaryInput {
  readonly jobId: string;
  readonly plan: CompactionPlan;
  /** The channel's working context when the pass starts. */
  readonly context: ContextView;
  /** The archived messages, oldest first: seq `n` at index `n - 1 - archiveBase`. */
  readonly archive: readonly ArchivedMessage[];
  /** Tokens of each archived message, whole (the context may hold a clipped copy), indexed as `archive`. */
  readonly archiveTokens: readonly number[];
  /** Seqs up to this one were dropped from the front of `archive` (default 0: none). */
  readonly archiveBase?: number;
  /** Stubs of microcompacted tool results by seq: a pass reads these in place of the results. */
  readonly stubs?: ReadonlyMap<number, { readonly text: string; readonly tokens: number }>;
  readonly tokenizer: Tokenizer;
  readonly maxTokens: number;
}

/** The summary and the summarizer's input and output tokens; or why the pass's range is stale. */
export type ArchiveSummary =
  | { readonly result: SummaryResult; readonly inputTokens: number; readonly outputTokens: number }
  | { readonly stale: string };

/** What the worker does at job start: `planSnapshot`, with the archive read from memory. */
export function summarizeFromArchive(input: ArchiveSummaryInput): ArchiveSummary {
  const { jobId, plan, tokenizer } = input;
  const snapshot = planSnapshot(input.context, plan);
  if (snapshot.kind === 'stale') return { stale: snapshot.reason };
  const earlier: string[] = [];
  const messages: ArchivedMessage[] = [];
  let inputTokens = 0;
  for (const part of snapshot.parts) {
    if (part.kind === 'summary') {
      earlier.push(part.text);
      inputTokens += part.tokens;
    } else {
      for (let seq = part.fromSeq; seq <= part.toSeq; seq++)
        inputTokens += takeArchived(input, seq, messages);
    }
  }
  const text = summarizeExtractive({
    earlierSummaries: earlier,
    messages,
    maxTokens: input.maxTokens,
    tokenizer,
  });
  return {
    result: {
      jobId,
      fromSeq: plan.fromSeq,
      toSeq: plan.toSeq,
      text,
      tokens: spanTokens(tokenizer, { kind: 'summary', fromSeq: plan.fromSeq, toSeq: plan.toSeq, text }),
    },
    inputTokens,
    outputTokens: tokenizer.count(text),
  };
}

function takeArchived(input: ArchiveSummaryInput, seq: number, into: ArchivedMessage[]): number {
  const index = seq - 1 - (input.archiveBase ?? 0);
  const message = input.archive[index];
  if (!message) throw new InvariantError(`seq ${seq} is not archived`);
  const stub = input.stubs?.get(seq);
  into.push(stub === undefined ? message : { ...message, text: stub.text });
  return stub?.tokens ?? input.archiveTokens[index] ?? 0;
}
