/**
 * The LLM summarizer. A pass whose input fits the summarizer's window is one chat call that writes
 * the structured summary, folds in the earlier summaries and extracts memories, all as JSON under a
 * strict schema. A larger input is split on message boundaries (never inside a tool call and its
 * results) into parts that fit; each part is summarized, then one more call (purpose `merge`) folds
 * the earlier summaries and the partial summaries into one. A provider "context length exceeded"
 * splits finer.
 *
 * When the LLM keeps failing:
 * - a refusal (a rejected key, no credit: `LLM_REFUSALS`) is thrown as `SummarizerGaveUpError`,
 *   never hidden behind a fallback: the pass fails and the operator sees it;
 * - the provider being busy or away (`LLM_UNAVAILABLE`: rate limit, 5xx, connection, timeout) is
 *   thrown the same way when the channel can wait (`input.canWait`): the job is retried later,
 *   after the provider's Retry-After; a model that answers garbage is not waited for;
 * - otherwise the fallback (extractive) summarizer writes the summary so the pass still shrinks the
 *   context, and the output says `fallback: true` with the failed call's error code.
 */

import {
  clipToTokens,
  type SummarizeInput,
  type Summarizer,
  SummarizerGaveUpError,
  type SummaryOutput,
  TakenBackError,
} from '@ebb/core';
import { LLM_REFUSALS, LLM_UNAVAILABLE, LlmError, toLlmError } from './errors.js';
import type { OpenAiSummarizerOptions, ResolvedSummarizerOptions } from './openai-summarizer-options.js';
import { DEFAULT_REQUEST_SETTINGS, RequestDialect } from './request-dialect.js';
import { SummaryPass } from './summary-pass.js';

const DEFAULT_OPTIONS = {
  maxOutputTokens: 16_384,
  clock: () => Date.now(),
} as const satisfies Required<Pick<OpenAiSummarizerOptions, 'maxOutputTokens' | 'clock'>>;

export class OpenAiSummarizer implements Summarizer {
  readonly #options: ResolvedSummarizerOptions;

  constructor(options: OpenAiSummarizerOptions) {
    const dialect = new RequestDialect(options.request ?? DEFAULT_REQUEST_SETTINGS, options.log);
    this.#options = { ...DEFAULT_OPTIONS, ...options, dialect };
  }

  async summarize(input: SummarizeInput, signal?: AbortSignal): Promise<SummaryOutput> {
    const pass = new SummaryPass(this.#options, input, signal);
    try {
      const summary = await pass.run();
      return {
        text: clipToTokens(summary, this.#options.tokenizer, input.maxTokens),
        memories: pass.memories,
        fallback: false,
        model: this.#options.model,
        calls: pass.calls,
      };
    } catch (caught) {
      if (signal?.aborted) throw toLlmError(caught);
      // A take-back covered the range meanwhile: nothing more is sent, and no fallback is written
      // from the old text either; the pass starts again from the redacted archive.
      if (caught instanceof TakenBackError) throw caught;
      if (
        caught instanceof LlmError &&
        (LLM_REFUSALS.has(caught.code) || (input.canWait && LLM_UNAVAILABLE.has(caught.code)))
      ) {
        throw new SummarizerGaveUpError(caught, pass.calls);
      }
      const out = await this.#options.fallback.summarize(input, signal);
      return {
        text: out.text,
        // Memories from parts that did succeed were read from the messages; keep them.
        memories: [...pass.memories, ...out.memories],
        fallback: true,
        model: out.model,
        calls: [...pass.calls, ...out.calls],
      };
    }
  }
}
