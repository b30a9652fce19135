/**
 * The parameters of a chat completions request beyond its messages, in the form the server it goes
 * to accepts. Today's OpenAI models (the GPT-5 family, the o-series) take `max_completion_tokens`
 * and refuse `max_tokens`; older OpenAI-compatible servers and gateways know only `max_tokens`, and
 * some refuse `prompt_cache_key` or `reasoning_effort`. A dialect starts from the operator's
 * `[llm]` settings and learns from the server: when a request is refused for a parameter it names
 * (`llm_unsupported_parameter`), an `auto` token limit switches to the other name, and an optional
 * parameter is dropped; the request is sent again at once, and every later request of this
 * dialect (one per model and server: each chat model and summarizer holds its own) goes out the
 * learned way. Each lesson is logged once (`llm.parameter_adapted`).
 *
 * Nothing else is sent unless the settings say so: no `temperature` (reasoning models refuse any
 * but the default), no `reasoning_effort`; `prompt_cache_retention` as `@ebb/config` resolves it
 * (by default `24h` for the models that take it).
 */
import { createHash } from 'node:crypto';
import { type Logger, type RequestSettings, SILENT_LOGGER } from '@ebb/core';
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { type LlmError, type OptionalParameter, toLlmError } from './errors.js';

export const DEFAULT_REQUEST_SETTINGS = {
  tokenLimitParam: 'auto',
  promptCacheKey: true,
} as const satisfies RequestSettings;

/** A request before the dialect shapes it. */
export interface ChatRequest {
  readonly model: string;
  readonly messages: ChatCompletionCreateParamsNonStreaming['messages'];
  /** The output cap (reasoning included, for a reasoning model). */
  readonly maxTokens: number;
  readonly tools?: ChatCompletionCreateParamsNonStreaming['tools'];
  readonly responseFormat?: ChatCompletionCreateParamsNonStreaming['response_format'];
  /** The channel the request is for: its prompts share a cache route (`promptCacheKey`). */
  readonly channelKey?: string;
}

/** A server can refuse each optional parameter once; one more send is the request itself. */
const MAX_SENDS = 6;

export class RequestDialect {
  readonly #settings: RequestSettings;
  readonly #log: Logger;
  #tokenLimit: 'max_completion_tokens' | 'max_tokens';
  readonly #dropped = new Set<OptionalParameter>();

  constructor(settings: RequestSettings = DEFAULT_REQUEST_SETTINGS, log: Logger = SILENT_LOGGER) {
    this.#settings = settings;
    this.#log = log;
    this.#tokenLimit = settings.tokenLimitParam === 'max_tokens' ? 'max_tokens' : 'max_completion_tokens';
  }

  /** The name the output cap goes by on this server, as learned so far. */
  get tokenLimitParam(): 'max_completion_tokens' | 'max_tokens' {
    return this.#tokenLimit;
  }

  /** The request as this server takes it. */
  body(request: ChatRequest): ChatCompletionCreateParamsNonStreaming {
    const s = this.#settings;
    const keep = (name: OptionalParameter) => !this.#dropped.has(name);
    return {
      model: request.model,
      messages: request.messages,
      [this.#tokenLimit]: request.maxTokens,
      ...(request.tools && request.tools.length > 0 ? { tools: request.tools } : {}),
      ...(request.responseFormat ? { response_format: request.responseFormat } : {}),
      ...(s.promptCacheKey && request.channelKey !== undefined && keep('prompt_cache_key')
        ? { prompt_cache_key: promptCacheKey(request.channelKey) }
        : {}),
      ...(s.promptCacheRetention && keep('prompt_cache_retention')
        ? { prompt_cache_retention: s.promptCacheRetention }
        : {}),
      ...(s.temperature !== undefined && keep('temperature') ? { temperature: s.temperature } : {}),
      ...(s.reasoningEffort && keep('reasoning_effort') ? { reasoning_effort: s.reasoningEffort } : {}),
    };
  }

  /**
   * Sends `request`, learning from each refusal of a parameter and sending again; a refusal it
   * cannot learn from, and every other failure, is thrown as an `LlmError`.
   */
  async create(client: OpenAI, request: ChatRequest, options: OpenAI.RequestOptions): Promise<unknown> {
    for (let send = 1; ; send++) {
      try {
        return await client.chat.completions.create(this.body(request), options);
      } catch (thrown) {
        const error = toLlmError(thrown);
        if (send >= MAX_SENDS || !this.learn(error, request.model)) throw error;
      }
    }
  }

  /** Whether the refusal taught this dialect something, so the request is worth sending again. */
  learn(error: LlmError, model: string): boolean {
    if (error.code !== 'llm_unsupported_parameter' || error.param === undefined) return false;
    const param = error.param as OptionalParameter;
    const other = param === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
    if (param === 'max_tokens' || param === 'max_completion_tokens') {
      if (this.#settings.tokenLimitParam !== 'auto' || this.#tokenLimit !== param) return false;
      this.#tokenLimit = other;
      this.#log.warn(
        { event: 'llm.parameter_adapted', model, refused: param, using: other },
        `the server refused ${param} for ${model}; sending ${other} from now on`,
      );
      return true;
    }
    if (this.#dropped.has(param) || !this.#sent(param)) return false;
    this.#dropped.add(param);
    this.#log.warn(
      { event: 'llm.parameter_adapted', model, refused: param, using: null },
      `the server refused ${param} for ${model}; no longer sending it`,
    );
    return true;
  }

  #sent(param: OptionalParameter): boolean {
    const s = this.#settings;
    switch (param) {
      case 'prompt_cache_key':
        return s.promptCacheKey;
      case 'prompt_cache_retention':
        return s.promptCacheRetention !== undefined;
      case 'temperature':
        return s.temperature !== undefined;
      case 'reasoning_effort':
        return s.reasoningEffort !== undefined;
      case 'max_tokens':
      case 'max_completion_tokens':
        return true;
    }
  }
}

/**
 * The `prompt_cache_key` of a channel: stable, the same for every process, and not the channel's
 * ids (which the provider has no need to see).
 */
export function promptCacheKey(channelKey: string): string {
  return `ebb-${createHash('sha256').update(channelKey).digest('hex').slice(0, 24)}`;
}
