/**
 * The summarizer without a model: core's `summarizeExtractive` behind the `Summarizer` port. It
 * serves offline mode and `ebb simulate`, and is the fallback when the LLM keeps failing.
 */
import {
  type SummarizeInput,
  type Summarizer,
  type SummaryOutput,
  summarizeExtractive,
  type Tokenizer,
} from '@ebb/core';

export const EXTRACTIVE_MODEL = 'extractive';

export interface ExtractiveSummarizerOptions {
  readonly tokenizer: Tokenizer;
}

export class ExtractiveSummarizer implements Summarizer {
  readonly #tokenizer: Tokenizer;

  constructor(options: ExtractiveSummarizerOptions) {
    this.#tokenizer = options.tokenizer;
  }

  async summarize(input: SummarizeInput, signal?: AbortSignal): Promise<SummaryOutput> {
    signal?.throwIfAborted();
    const text = summarizeExtractive({
      earlierSummaries: input.earlierSummaries,
      messages: input.messages,
      maxTokens: input.maxTokens,
      tokenizer: this.#tokenizer,
    });
    return { text, memories: [], fallback: false, model: EXTRACTIVE_MODEL, calls: [] };
  }
}
