/**
 * The OpenAI Chat Completions wire format, as the fake server writes it: completion objects, stream
 * chunks and error bodies shaped like the real API's, so the real `openai` client parses them. Typed
 * with the client's own types, so a shape the client does not expect fails the typecheck.
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

export interface FakeToolCall {
  /** Defaults to `call_<n>`; `null` sends the call without an id, as some OpenAI-compatible servers do. */
  readonly id?: string | null;
  readonly name: string;
  /** A JSON string as the API sends it, or an object to serialize. */
  readonly arguments: string | Readonly<Record<string, unknown>>;
}

/** What the fake model answers. */
export interface FakeReply {
  /** The message text; for structured output, the JSON text itself. */
  readonly content?: string | null;
  /** Structured output shorthand: serialized with `JSON.stringify` as the message content. */
  readonly json?: unknown;
  readonly toolCalls?: readonly FakeToolCall[];
  readonly refusal?: string;
  /** Defaults to `tool_calls` when there are tool calls, `stop` otherwise. */
  readonly finishReason?: FinishReason;
  /** Overrides the estimated token counts. */
  readonly usage?: { readonly promptTokens?: number; readonly completionTokens?: number };
  /**
   * Hidden reasoning the model spends before it writes, out of the completion budget
   * (`max_completion_tokens`), as reasoning models do: when it takes the whole budget the reply has
   * no text and `finish_reason: "length"`.
   */
  readonly reasoningTokens?: number;
  /** Defaults to the requested model. */
  readonly model?: string;
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  /** Present when the server has a prompt cache, as OpenAI reports it. */
  readonly prompt_tokens_details?: { readonly cached_tokens: number; readonly audio_tokens: number };
  readonly completion_tokens_details?: {
    readonly reasoning_tokens: number;
    readonly audio_tokens: number;
    readonly accepted_prediction_tokens: number;
    readonly rejected_prediction_tokens: number;
  };
}

/** The body of an API error, exactly as OpenAI sends it. */
export interface ErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string | null;
  };
}

export function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): ErrorBody {
  return { error: { message, type, param, code } };
}

export function contextLengthMessage(
  maxContext: number,
  promptTokens: number,
  completionTokens: number,
): string {
  const head = `This model's maximum context length is ${maxContext} tokens.`;
  return completionTokens > 0
    ? `${head} However, you requested ${promptTokens + completionTokens} tokens (${promptTokens} in the messages, ${completionTokens} in the completion). Please reduce the length of the messages or completion.`
    : `${head} However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`;
}

/** The text of a request message, whether its content is a string or an array of parts. */
export function messageText(message: ChatCompletionCreateParams['messages'][number]): string {
  const content = message.content;
  let text = '';
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    text = content.map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');
  }
  if ('tool_calls' in message && Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (call.type === 'function') text += call.function.name + call.function.arguments;
    }
  }
  return text;
}

/** The prompt tokens of a request: message texts plus OpenAI's per-message framing, tools and schema. */
export function promptTokens(
  request: ChatCompletionCreateParams,
  countTokens: (text: string) => number,
): number {
  let tokens = 3; // every reply is primed with <|start|>assistant<|message|>
  for (const message of request.messages) tokens += countTokens(messageText(message)) + 4;
  if (request.tools) tokens += countTokens(JSON.stringify(request.tools));
  if (request.response_format && request.response_format.type !== 'text') {
    tokens += countTokens(JSON.stringify(request.response_format));
  }
  return tokens;
}

/** The requested output cap, whichever of the two parameters carries it. */
export function requestedMaxTokens(request: ChatCompletionCreateParams): number {
  return request.max_completion_tokens ?? request.max_tokens ?? 0;
}

export interface ResolvedReply {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly content: string | null;
  readonly refusal: string | null;
  readonly toolCalls: readonly ChatCompletionMessageFunctionToolCall[];
  readonly finishReason: FinishReason;
  readonly usage: Usage;
}

export function resolveReply(
  reply: FakeReply,
  request: ChatCompletionCreateParams,
  ids: { readonly completionId: string; readonly toolCallId: (index: number) => string },
  countTokens: (text: string) => number,
  created: number,
  /** The cached tokens of a prompt of this size; undefined for a server without a prompt cache. */
  cachedTokens: (promptTokens: number) => number | undefined = () => undefined,
): ResolvedReply {
  const budget = requestedMaxTokens(request);
  const reasoning = reply.reasoningTokens ?? 0;
  const exhausted = reasoning > 0 && budget > 0 && reasoning >= budget;
  const written = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.content ?? null);
  const content = exhausted ? '' : written;
  const toolCalls = (reply.toolCalls ?? []).map(
    (call, index) =>
      // Without an id when asked: off the client's types, which is the point.
      ({
        ...(call.id === null ? {} : { id: call.id ?? ids.toolCallId(index) }),
        type: 'function',
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      }) as ChatCompletionMessageFunctionToolCall,
  );
  const prompt = reply.usage?.promptTokens ?? promptTokens(request, countTokens);
  const completion = exhausted
    ? budget
    : (reply.usage?.completionTokens ??
      reasoning +
        countTokens(content ?? '') +
        toolCalls.reduce((sum, c) => sum + countTokens(c.function.name + c.function.arguments), 0));
  const cached = cachedTokens(prompt);
  return {
    id: ids.completionId,
    created,
    model: reply.model ?? request.model,
    content,
    refusal: reply.refusal ?? null,
    toolCalls: exhausted ? [] : toolCalls,
    finishReason: exhausted
      ? 'length'
      : (reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop')),
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 } }),
      completion_tokens_details: {
        reasoning_tokens: exhausted ? budget : reasoning,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
  };
}

export function completionBody(reply: ResolvedReply): ChatCompletion {
  return {
    id: reply.id,
    object: 'chat.completion',
    created: reply.created,
    model: reply.model,
    system_fingerprint: 'fp_ebb_fake',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.content,
          refusal: reply.refusal,
          annotations: [],
          ...(reply.toolCalls.length > 0 ? { tool_calls: [...reply.toolCalls] } : {}),
        },
        logprobs: null,
        finish_reason: reply.finishReason,
      },
    ],
    usage: { ...reply.usage },
  };
}

/**
 * The chunks of a streamed reply, in order: the role, the content in pieces of `chunkChars`, each
 * tool call (name first, then its arguments in pieces), the finish reason, and with
 * `include_usage` a last chunk with no choices and the usage (earlier chunks then carry `usage: null`).
 */
export function streamChunks(
  reply: ResolvedReply,
  includeUsage: boolean,
  chunkChars: number,
): ChatCompletionChunk[] {
  const chunks: ChatCompletionChunk[] = [];
  const chunk = (
    delta: ChatCompletionChunk.Choice.Delta,
    finishReason: FinishReason | null = null,
  ): ChatCompletionChunk => ({
    id: reply.id,
    object: 'chat.completion.chunk',
    created: reply.created,
    model: reply.model,
    system_fingerprint: 'fp_ebb_fake',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(includeUsage ? { usage: null } : {}),
  });
  chunks.push(chunk({ role: 'assistant', content: '', refusal: null }));
  for (const piece of pieces(reply.content ?? '', chunkChars)) chunks.push(chunk({ content: piece }));
  if (reply.refusal !== null) chunks.push(chunk({ refusal: reply.refusal }));
  reply.toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [
          { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
        ],
      }),
    );
    for (const piece of pieces(call.function.arguments, chunkChars)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, reply.finishReason));
  if (includeUsage) {
    chunks.push({
      id: reply.id,
      object: 'chat.completion.chunk',
      created: reply.created,
      model: reply.model,
      system_fingerprint: 'fp_ebb_fake',
      choices: [],
      usage: { ...reply.usage },
    });
  }
  return chunks;
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
