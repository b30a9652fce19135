/**
 * The model that answers in channels, through any OpenAI-compatible server. Retries transient
 * failures (rate limits honouring Retry-After, 5xx, timeouts) a few times; a context overflow is
 * not retried here but thrown as `llm_context_overflow`, so the bot can truncate and try again.
 * Tools are offered as functions under their wire names (`tool-wire-names.ts`), and the calls the
 * model makes come back under Ebb's names.
 *
 * The request is shaped by a `RequestDialect` (`max_completion_tokens` or `max_tokens`, the
 * channel's `prompt_cache_key`, only the optional parameters the operator set), which learns what
 * this server refuses. Every failed try, retried or not, is reported with the reply or the error
 * (`failedTries`), so a 429 storm a retry hid is still counted.
 */
import type {
  ChatMessage,
  ChatModel,
  ChatReply,
  ChatReplyOptions,
  Logger,
  RequestSettings,
  ToolSpec,
} from '@ebb/core';
import type OpenAI from 'openai';
import { readOutcome, readReply, readUsage } from './completion.js';
import { DEFAULT_REQUEST_SETTINGS, RequestDialect } from './request-dialect.js';
import { DEFAULT_RETRY, type RetryOptions, withRetries } from './retry.js';
import { toWireName, wireNames } from './tool-wire-names.js';

export interface OpenAiChatModelOptions {
  /** Built with `maxRetries: 0`: `retry` is the one retry policy. */
  readonly client: OpenAI;
  readonly model: string;
  readonly maxOutputTokens: number;
  readonly timeoutMs?: number;
  readonly retry?: RetryOptions;
  /** The `[llm]` request settings (token limit name, prompt cache key, temperature, reasoning effort). */
  readonly request?: RequestSettings;
  /** Where a parameter the server refused is reported (`llm.parameter_adapted`). */
  readonly log?: Logger;
}

export const DEFAULT_CHAT_TIMEOUT_MS = 60_000;
/** A user is waiting: fewer and shorter retries than a background summary. */
export const CHAT_RETRY = {
  ...DEFAULT_RETRY,
  attempts: 3,
  maxDelayMs: 5_000,
  maxRetryAfterMs: 10_000,
} as const;

export class OpenAiChatModel implements ChatModel {
  readonly label: string;
  readonly #options: OpenAiChatModelOptions;
  readonly #dialect: RequestDialect;

  constructor(options: OpenAiChatModelOptions) {
    this.#options = options;
    this.label = options.model;
    this.#dialect = new RequestDialect(options.request ?? DEFAULT_REQUEST_SETTINGS, options.log);
  }

  async reply(messages: readonly ChatMessage[], options: ChatReplyOptions = {}): Promise<ChatReply> {
    const { client, model, maxOutputTokens } = this.#options;
    const { signal } = options;
    const specs = options.tools ?? [];
    const wire = wireNames(specs.map((spec) => spec.name));
    const fromWire = new Map([...wire].map(([name, onWire]) => [onWire, name]));
    const request = {
      model,
      messages: onTheWire(messages, wire),
      maxTokens: maxOutputTokens,
      ...(specs.length === 0 ? {} : { tools: specs.map((spec) => functionTool(spec, wire)) }),
      ...(options.channelKey === undefined ? {} : { channelKey: options.channelKey }),
    };
    const result = await withRetries(
      async () => {
        const completion = await this.#dialect.create(client, request, {
          timeout: this.#options.timeoutMs ?? DEFAULT_CHAT_TIMEOUT_MS,
          maxRetries: 0,
          ...(signal ? { signal } : {}),
        });
        const usage = readUsage(completion);
        const { text, toolCalls } = readReply(completion);
        return {
          text,
          ...(toolCalls.length === 0
            ? {}
            : {
                toolCalls: toolCalls.map((call) => ({ ...call, name: fromWire.get(call.name) ?? call.name })),
              }),
          promptTokens: usage.prompt,
          cachedPromptTokens: usage.cached,
          completionTokens: usage.completion,
          ...readOutcome(completion),
        };
      },
      this.#options.retry ?? CHAT_RETRY,
      signal,
    );
    if (!result.ok) throw result.error.afterTries(result.failures);
    return result.failures.length === 0 ? result.value : { ...result.value, failedTries: result.failures };
  }
}

function functionTool(spec: ToolSpec, wire: ReadonlyMap<string, string>): OpenAI.ChatCompletionFunctionTool {
  return {
    type: 'function',
    function: {
      name: wire.get(spec.name) ?? toWireName(spec.name),
      description: spec.description,
      parameters: spec.parameters as OpenAI.FunctionParameters,
    },
  };
}

/** The messages with the tool names of earlier calls as the wire has them. */
function onTheWire(
  messages: readonly ChatMessage[],
  wire: ReadonlyMap<string, string>,
): OpenAI.ChatCompletionMessageParam[] {
  return messages.map((m): OpenAI.ChatCompletionMessageParam => {
    if (m.role !== 'assistant' || m.tool_calls === undefined) return m as OpenAI.ChatCompletionMessageParam;
    return {
      role: 'assistant',
      content: m.content,
      tool_calls: m.tool_calls.map((c) => ({
        id: c.id,
        type: 'function',
        function: {
          name: wire.get(c.function.name) ?? toWireName(c.function.name),
          arguments: c.function.arguments,
        },
      })),
    };
  });
}
