/** Reading a chat completion as the openai client returns it (which may be any shape from a non-OpenAI server). */
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import { LlmError } from './errors.js';

export interface CompletionUsage {
  readonly prompt: number;
  /** The part of `prompt` the provider served from its prompt cache (0 when it says nothing). */
  readonly cached: number;
  readonly completion: number;
}

/**
 * The usage a completion reports. Cached prompt tokens as OpenAI reports them
 * (`prompt_tokens_details.cached_tokens`), or as gateways passing Anthropic's through do
 * (`cache_read_input_tokens`).
 */
export function readUsage(completion: unknown): CompletionUsage {
  const usage = isCompletion(completion) ? completion.usage : undefined;
  const prompt = count(usage?.prompt_tokens);
  const gateway = (usage as { cache_read_input_tokens?: unknown } | undefined)?.cache_read_input_tokens;
  const cached = count(usage?.prompt_tokens_details?.cached_tokens) || count(gateway);
  return { prompt, cached: Math.min(prompt, cached), completion: count(usage?.completion_tokens) };
}

/** Who answered and why it stopped, as the completion says (for traces); each absent when it does not say. */
export function readOutcome(completion: unknown): { responseModel?: string; finishReason?: string } {
  if (!isCompletion(completion)) return {};
  // A non-OpenAI server may send anything in these fields, whatever the client's types say.
  const model: unknown = completion.model;
  const finish: unknown = Array.isArray(completion.choices)
    ? completion.choices[0]?.finish_reason
    : undefined;
  return {
    ...(typeof model === 'string' && model !== '' ? { responseModel: model } : {}),
    ...(typeof finish === 'string' && finish !== '' ? { finishReason: finish } : {}),
  };
}

/** A token count as a server sent it: a finite number >= 0, else 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

/** The reply text of a completion; `llm_malformed_output` or `llm_bad_request` for anything else. */
export function readContent(completion: unknown): string {
  if (!isCompletion(completion)) {
    throw new LlmError('the LLM answered with something that is not a chat completion', {
      code: 'llm_malformed_output',
      retryable: true,
    });
  }
  const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
  const message = choice?.message;
  if (message?.refusal || choice?.finish_reason === 'content_filter') {
    throw new LlmError(`the LLM declined: ${message?.refusal ?? 'content filter'}`, {
      code: 'llm_bad_request',
      retryable: false,
    });
  }
  if (choice?.finish_reason === 'length' && !message?.content) {
    const reasoning = count(
      (completion.usage as { completion_tokens_details?: { reasoning_tokens?: unknown } } | undefined)
        ?.completion_tokens_details?.reasoning_tokens,
    );
    throw new LlmError(
      `the model used its whole output budget (${count(completion.usage?.completion_tokens)} tokens, ${reasoning} of them hidden reasoning) without writing any text`,
      { code: 'llm_output_exhausted', retryable: false },
    );
  }
  if (choice?.finish_reason === 'length') {
    throw new LlmError('the reply was cut off at its output limit', {
      code: 'llm_malformed_output',
      retryable: true,
    });
  }
  if (typeof message?.content !== 'string' || message.content === '') {
    throw new LlmError('the reply has no content', { code: 'llm_malformed_output', retryable: true });
  }
  return message.content;
}

/**
 * The text and the tool calls of a completion (function calls only; their names as the wire has
 * them). With tool calls the text may be empty; without, it is `readContent`'s. Every call has an
 * id of its own (`uniqueCallIds`): its result is paired with its call by that id.
 */
export function readReply(completion: unknown): { text: string; toolCalls: ToolCallOnWire[] } {
  const message =
    isCompletion(completion) && Array.isArray(completion.choices)
      ? completion.choices[0]?.message
      : undefined;
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  const callId = uniqueCallIds();
  const toolCalls = calls.flatMap((call, index) =>
    call.type === 'function' && typeof call.function?.name === 'string'
      ? [{ id: callId(call.id, index), name: call.function.name, arguments: call.function.arguments ?? '' }]
      : [],
  );
  if (toolCalls.length === 0) return { text: readContent(completion), toolCalls };
  const choice = isCompletion(completion) ? completion.choices?.[0] : undefined;
  if (choice?.finish_reason === 'length') {
    throw new LlmError('the tool call was cut off at its output limit', {
      code: 'llm_malformed_output',
      retryable: true,
    });
  }
  return { text: typeof message?.content === 'string' ? message.content : '', toolCalls };
}

/**
 * The ids the calls of one reply go by: each as sent when it is a string no earlier call of the
 * reply has; a missing, empty or repeated one gets `call_<index>_<random>`. Without this a call
 * with no id would have a result with no `tool_call_id` (the prompt drops such a pair, and the
 * model asks again until the turn runs out of steps), and two calls with one id would pair both
 * results with the first.
 */
export function uniqueCallIds(): (sent: unknown, index: number) => string {
  const taken = new Set<string>();
  return (sent, index) => {
    let id = typeof sent === 'string' && sent !== '' ? sent : generatedId(index);
    while (taken.has(id)) id = generatedId(index);
    taken.add(id);
    return id;
  };
}

function generatedId(index: number): string {
  return `call_${index}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

export interface ToolCallOnWire {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The client returns a body that is not JSON as a string; a JSON body may still be any shape. */
function isCompletion(value: unknown): value is Partial<OpenAI.ChatCompletion> {
  return typeof value === 'object' && value !== null && 'choices' in value;
}
