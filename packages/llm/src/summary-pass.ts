/**
 * One `OpenAiSummarizer.summarize` call: its LLM calls and memories, and the split/merge recursion
 * (a part per window-sized slice of the transcript, then a merge), with the token budgets each call
 * is planned with.
 */
import {
  clipToTokens,
  type LlmCall,
  MESSAGE_OVERHEAD_TOKENS,
  type ProposedMemory,
  type SummarizeInput,
  type Tokenizer,
} from '@ebb/core';
import { readContent, readUsage } from './completion.js';
import { isLlmError, LlmError } from './errors.js';
import type { ResolvedSummarizerOptions } from './openai-summarizer-options.js';
import type { ChatRequest } from './request-dialect.js';
import { withRetries } from './retry.js';
import {
  MAX_MEMORIES_PER_CALL,
  mergeSystemPrompt,
  mergeUserPrompt,
  summarySystemPrompt,
  summaryUserPrompt,
} from './summary-prompt.js';
import {
  MERGE_RESPONSE_FORMAT,
  type ParsedSummary,
  parseSummaryReply,
  SUMMARY_RESPONSE_FORMAT,
} from './summary-schema.js';
import { halve, packUnits, type TranscriptUnit, toUnits } from './summary-transcript.js';

/** Output reserved per memory (JSON keys, a sentence, seqs). */
const TOKENS_PER_MEMORY = 64;
/** JSON quoting and keys around the summary text. */
const JSON_OVERHEAD_TOKENS = 64;
/** Slack for joins the per-line counts do not see (fences, headers, numbers in the frame). */
const SAFETY_TOKENS = 64;
/** A part must hold at least this many transcript tokens, or the window is too small to split into. */
const MIN_PART_TOKENS = 256;
/** A partial summary is never told to be shorter than this. */
const MIN_PART_BOUND = 200;
/** Per summary in a merge prompt: its fence and label. */
const MERGE_ITEM_OVERHEAD = 24;
/** How often a provider overflow may split the same input finer. */
const MAX_SPLIT_DEPTH = 6;
/** Every reply is primed with a few tokens of framing. */
const REPLY_PRIMING_TOKENS = 3;

/**
 * A reasoning model may think through its whole output budget and write nothing
 * (`llm_output_exhausted`): the call is made once more with this many times the budget, where the
 * window has room, before the pass fails.
 */
const EXHAUSTED_BUDGET_FACTOR = 4;

type Request = ChatRequest;

/** One summarize() call: its LLM calls and memories, and the split/merge recursion. */
export class SummaryPass {
  readonly calls: LlmCall[] = [];
  readonly memories: ProposedMemory[] = [];
  readonly #options: ResolvedSummarizerOptions;
  readonly #input: SummarizeInput;
  readonly #signal: AbortSignal | undefined;
  readonly #tokenizer: Tokenizer;

  constructor(options: ResolvedSummarizerOptions, input: SummarizeInput, signal: AbortSignal | undefined) {
    this.#options = options;
    this.#input = input;
    this.#signal = signal;
    this.#tokenizer = options.tokenizer;
  }

  async run(): Promise<string> {
    const input = this.#input;
    const earlier = input.earlierSummaries.filter((s) => s.trim() !== '');
    const units = toUnits(input.messages, this.#tokenizer);
    if (units.length === 0) return this.#mergeAll(earlier, 0);

    const single = this.#summaryRequest(units, earlier, input.maxTokens, false);
    let forceSplit = false;
    if (this.#summaryFits(units, earlier, input.maxTokens, false)) {
      try {
        return (await this.#call('summary', single)).summary;
      } catch (error) {
        if (!isLlmError(error, 'llm_context_overflow')) throw error;
        forceSplit = true;
      }
    }

    // Split: parts of the messages alone; the earlier summaries join the merge.
    const budget = this.#lineBudget(input.maxTokens);
    if (budget < MIN_PART_TOKENS) {
      throw new LlmError(
        `the summarizer window (${this.#options.contextWindow} tokens) leaves ${budget} tokens for messages`,
        { code: 'llm_context_overflow', retryable: false },
      );
    }
    let parts = packUnits(units, budget, this.#tokenizer);
    if (forceSplit && parts.length < 2) parts = halve(units, this.#tokenizer);
    const mergeRoom =
      this.#mergeRoom(input.maxTokens) - (parts.length + earlier.length) * MERGE_ITEM_OVERHEAD;
    const partBound = Math.min(
      input.maxTokens,
      Math.max(MIN_PART_BOUND, Math.floor(mergeRoom / (parts.length + earlier.length))),
    );
    const partials: string[] = [];
    for (const part of parts) partials.push(...(await this.#summarizePart(part, partBound, 0)));
    return this.#mergeAll([...earlier, ...partials], 0);
  }

  /** Summaries of one part, oldest first: one, or several when the provider made us split it. */
  async #summarizePart(units: readonly TranscriptUnit[], bound: number, depth: number): Promise<string[]> {
    const request = this.#summaryRequest(units, [], bound, true);
    if (this.#summaryFits(units, [], bound, true)) {
      try {
        return [(await this.#call('summary', request)).summary];
      } catch (error) {
        if (!isLlmError(error, 'llm_context_overflow') || depth >= MAX_SPLIT_DEPTH) throw error;
      }
    } else if (depth >= MAX_SPLIT_DEPTH) {
      throw new LlmError('a part of the transcript does not fit the summarizer window', {
        code: 'llm_context_overflow',
        retryable: false,
      });
    }
    const out: string[] = [];
    for (const half of halve(units, this.#tokenizer)) {
      out.push(...(await this.#summarizePart(half, bound, depth + 1)));
    }
    return out;
  }

  /** Folds summaries (oldest first) into one within the pass's bound. */
  async #mergeAll(texts: readonly string[], depth: number): Promise<string> {
    const bound = this.#input.maxTokens;
    const [only] = texts;
    if (only === undefined) return '';
    if (texts.length === 1 && this.#tokenizer.count(only) <= bound) return only;

    const request = this.#mergeRequest(texts, bound);
    if (this.#fits(request)) {
      try {
        return (await this.#call('merge', request)).summary;
      } catch (error) {
        if (!isLlmError(error, 'llm_context_overflow') || depth >= MAX_SPLIT_DEPTH) throw error;
        return this.#mergeInGroups(texts, Math.floor(this.#measure(texts) / 2), depth);
      }
    }
    if (depth >= MAX_SPLIT_DEPTH) {
      throw new LlmError('the summaries to merge do not fit the summarizer window', {
        code: 'llm_context_overflow',
        retryable: false,
      });
    }
    return this.#mergeInGroups(texts, this.#mergeRoom(bound), depth);
  }

  /**
   * Merges groups of consecutive summaries that fit `room`, then merges the results. Each summary is
   * first clipped to half the room, so every group but the last holds two or more and the count
   * shrinks with each round.
   */
  async #mergeInGroups(texts: readonly string[], room: number, depth: number): Promise<string> {
    const itemRoom = Math.floor(room / 2) - MERGE_ITEM_OVERHEAD;
    if (itemRoom < MIN_PART_BOUND / 2) {
      throw new LlmError('the summarizer window is too small to merge summaries', {
        code: 'llm_context_overflow',
        retryable: false,
      });
    }
    const items = texts.map((t) => clipToTokens(t, this.#tokenizer, itemRoom));
    const groups: string[][] = [];
    let current: string[] = [];
    let used = 0;
    for (const item of items) {
      const cost = this.#tokenizer.count(item) + MERGE_ITEM_OVERHEAD;
      if (current.length > 0 && used + cost > room) {
        groups.push(current);
        current = [];
        used = 0;
      }
      current.push(item);
      used += cost;
    }
    groups.push(current);
    if (groups.length === 1) return this.#mergeAll(groups[0] ?? [], depth + 1);
    const merged: string[] = [];
    for (const group of groups) merged.push(await this.#mergeAll(group, depth + 1));
    return this.#mergeAll(merged, depth + 1);
  }

  #summaryRequest(
    units: readonly TranscriptUnit[],
    earlier: readonly string[],
    bound: number,
    partial: boolean,
  ): Request {
    const { told, maxTokens } = this.#outputBudget(bound, MAX_MEMORIES_PER_CALL * TOKENS_PER_MEMORY);
    return {
      model: this.#options.model,
      messages: [
        { role: 'system', content: summarySystemPrompt(told) },
        {
          role: 'user',
          content: summaryUserPrompt({
            fromSeq: this.#input.fromSeq,
            toSeq: this.#input.toSeq,
            units,
            earlierSummaries: earlier,
            partial,
            focus: this.#input.focus,
          }),
        },
      ],
      maxTokens,
      responseFormat: SUMMARY_RESPONSE_FORMAT,
      channelKey: this.#input.channelKey,
    };
  }

  #mergeRequest(texts: readonly string[], bound: number): Request {
    const { told, maxTokens } = this.#outputBudget(bound, 0);
    return {
      model: this.#options.model,
      messages: [
        { role: 'system', content: mergeSystemPrompt(told) },
        {
          role: 'user',
          content: mergeUserPrompt({
            fromSeq: this.#input.fromSeq,
            toSeq: this.#input.toSeq,
            summaries: texts,
            focus: this.#input.focus,
          }),
        },
      ],
      maxTokens,
      responseFormat: MERGE_RESPONSE_FORMAT,
      channelKey: this.#input.channelKey,
    };
  }

  /** The bound told to the model and `max_tokens`: the summary, JSON around it, and `extra` for memories. */
  #outputBudget(bound: number, extra: number): { told: number; maxTokens: number } {
    const wanted = Math.ceil(bound * 1.1) + JSON_OVERHEAD_TOKENS + extra;
    const maxTokens = Math.min(this.#options.maxOutputTokens, wanted);
    const told =
      maxTokens === wanted
        ? bound
        : Math.max(1, Math.floor((maxTokens - JSON_OVERHEAD_TOKENS - extra) / 1.1));
    return { told, maxTokens };
  }

  /** Tokens the request's prompt takes, counted the way the provider frames chat messages. */
  #promptTokens(request: Request): number {
    let tokens = REPLY_PRIMING_TOKENS + this.#tokenizer.count(JSON.stringify(request.responseFormat ?? ''));
    for (const message of request.messages) {
      tokens += this.#tokenizer.count(typeof message.content === 'string' ? message.content : '');
      tokens += MESSAGE_OVERHEAD_TOKENS;
    }
    return tokens;
  }

  /**
   * Whether a summary request fits, from the tokens already counted per transcript line plus the
   * frame (system prompt, earlier summaries, schema) counted once: the transcript is never counted
   * twice, which on a 1,000-message pass is most of the pass's CPU time.
   */
  #summaryFits(
    units: readonly TranscriptUnit[],
    earlier: readonly string[],
    bound: number,
    part: boolean,
  ): boolean {
    const frame = this.#summaryRequest([], earlier, bound, part);
    const lines = units.reduce((sum, u) => sum + u.tokens, 0);
    return this.#promptTokens(frame) + lines + frame.maxTokens + SAFETY_TOKENS <= this.#options.contextWindow;
  }

  #fits(request: Request): boolean {
    return this.#promptTokens(request) + request.maxTokens + SAFETY_TOKENS <= this.#options.contextWindow;
  }

  /** Transcript tokens a part may hold: the window less the prompt frame and the output. */
  #lineBudget(bound: number): number {
    const frame = this.#summaryRequest([], [], bound, true);
    return this.#options.contextWindow - this.#promptTokens(frame) - frame.maxTokens - SAFETY_TOKENS;
  }

  /** Summary tokens a merge prompt may hold. */
  #mergeRoom(bound: number): number {
    const frame = this.#mergeRequest([], bound);
    return this.#options.contextWindow - this.#promptTokens(frame) - frame.maxTokens - SAFETY_TOKENS;
  }

  #measure(texts: readonly string[]): number {
    return texts.reduce((sum, t) => sum + this.#tokenizer.count(t) + MERGE_ITEM_OVERHEAD, 0);
  }

  /**
   * One chat call with retries, recorded in `calls`; throws the mapped error when it fails for good.
   * A reply cut off before any text (a reasoning model that spent the budget thinking) is asked once
   * more with a larger budget, as far as the window allows.
   */
  async #call(purpose: 'summary' | 'merge', request: Request): Promise<ParsedSummary> {
    try {
      return await this.#callOnce(purpose, request);
    } catch (error) {
      if (!isLlmError(error, 'llm_output_exhausted')) throw error;
      const room = this.#options.contextWindow - this.#promptTokens(request) - SAFETY_TOKENS;
      const larger = Math.min(request.maxTokens * EXHAUSTED_BUDGET_FACTOR, room);
      if (larger <= request.maxTokens) throw error;
      return this.#callOnce(purpose, { ...request, maxTokens: larger });
    }
  }

  async #callOnce(purpose: 'summary' | 'merge', request: Request): Promise<ParsedSummary> {
    const { client, clock, timeoutMs, retry, model, dialect } = this.#options;
    const started = clock();
    let inputTokens = 0;
    let cachedInputTokens = 0;
    let outputTokens = 0;
    const result = await withRetries(
      async () => {
        const completion = await dialect.create(client, request, {
          timeout: timeoutMs,
          maxRetries: 0,
          ...(this.#signal ? { signal: this.#signal } : {}),
        });
        // Tokens are spent even when the reply is then rejected.
        const usage = readUsage(completion);
        inputTokens += usage.prompt;
        cachedInputTokens += usage.cached;
        outputTokens += usage.completion;
        return parseSummaryReply(readContent(completion), purpose);
      },
      retry,
      this.#signal,
      this.#input.beforeCall,
    );
    this.calls.push({
      purpose,
      model,
      inputTokens,
      cachedInputTokens,
      outputTokens,
      durationMs: Math.max(0, clock() - started),
      attempts: result.attempts,
      ...(result.ok ? {} : { error: result.error.code }),
      ...(result.failures.length === 0 ? {} : { failedTries: result.failures }),
    });
    if (!result.ok) throw result.error;
    this.memories.push(...result.value.memories);
    return result.value;
  }
}
