/**
 * Which request parameters a server refuses, and the 400 it answers with, as the real ones do:
 *
 * - `openai` (api.openai.com today): the GPT-5 family and the o-series refuse `max_tokens` (they take
 *   `max_completion_tokens`) and any `temperature` but 1; the older chat models refuse
 *   `reasoning_effort`. Everything else Ebb sends is accepted.
 * - `legacy` (an older OpenAI-compatible server or gateway): knows `max_tokens` only, and none of
 *   `max_completion_tokens`, `prompt_cache_key`, `prompt_cache_retention`, `reasoning_effort`.
 *
 * The bodies are the real APIs' own: OpenAI names the parameter in `param` with code
 * `unsupported_parameter` (or `unsupported_value`); the older servers only say
 * "Unrecognized request argument supplied: NAME".
 */
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { type ErrorBody, errorBody } from './wire.js';

export type ServerDialect = 'openai' | 'legacy';

/** Parameters a `legacy` server has never heard of. */
const UNKNOWN_TO_LEGACY = [
  'max_completion_tokens',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning_effort',
] as const;

/** GPT-5 family and o-series names: the reasoning models. */
export function isReasoningModel(model: string): boolean {
  return /^(gpt-5|o\d)/i.test(model);
}

/** The 400 body the server answers `request` with, or undefined when it accepts every parameter. */
export function refusedParameter(
  request: ChatCompletionCreateParams,
  dialect: ServerDialect,
): ErrorBody | undefined {
  const body = request as unknown as Readonly<Record<string, unknown>>;
  if (dialect === 'legacy') {
    const unknown = UNKNOWN_TO_LEGACY.find((name) => body[name] !== undefined);
    return unknown === undefined
      ? undefined
      : errorBody(`Unrecognized request argument supplied: ${unknown}`, 'invalid_request_error');
  }
  if (isReasoningModel(request.model)) {
    if (body.max_tokens !== undefined) {
      return errorBody(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        'invalid_request_error',
        'unsupported_parameter',
        'max_tokens',
      );
    }
    if (body.temperature !== undefined && body.temperature !== 1) {
      return errorBody(
        `Unsupported value: 'temperature' does not support ${String(body.temperature)} with this model. Only the default (1) value is supported.`,
        'invalid_request_error',
        'unsupported_value',
        'temperature',
      );
    }
    return undefined;
  }
  if (body.reasoning_effort !== undefined) {
    return errorBody(
      "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
      'invalid_request_error',
      'unsupported_parameter',
      'reasoning_effort',
    );
  }
  return undefined;
}
