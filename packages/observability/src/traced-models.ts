/**
 * A span per chat-model call, in OpenTelemetry's GenAI semantic conventions: named `chat <model>`,
 * kind CLIENT, with the operation, the provider, the model asked for and the one that answered, the
 * input tokens (the cached part too), the output tokens and the finish reason. One span covers one
 * `reply()`, its retries included (their error codes in `ebb.llm.failed_tries`); it is a child of
 * whatever span is active (the turn), and the model's HTTP request runs inside it.
 *
 * Never message text: neither the prompt, the reply nor a tool call's arguments become attributes,
 * and a failure is its code (`error.type`), not its message (an `LlmError`'s can quote the model's
 * refusal). The convention's attributes are still in development; their names are kept here, as
 * OpenTelemetry advises for unstable ones, as `@opentelemetry/semantic-conventions` 1.45 spells
 * them (`gen_ai.provider.name`, which replaced `gen_ai.system`; cached input as
 * `gen_ai.usage.cache_read.input_tokens`, a part of `gen_ai.usage.input_tokens`).
 *
 * With tracing off the span is the API's no-op and no attribute is built past the request's.
 * Compose it with `meteredChatModel` on real models only (the offline responder is not an LLM).
 *
 * A pass's summarizer (`tracedSummarizer`) makes its calls inside one `summarize()`: its span is
 * `ebb summarize`, and each model call it reports (`LlmCall`, with its duration) becomes a `chat
 * <model>` child laid out back to back up to the summary's end, with the same attributes.
 */
import {
  type ChatModel,
  type ChatReply,
  errorCodeOf,
  type LlmCall,
  type Summarizer,
  SummarizerGaveUpError,
} from '@ebb/core';
import { type Attributes, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { triesOf } from './call-failures.js';
import { EBB_VERSION } from './version.js';

export const GEN_AI_ATTRIBUTES = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  errorType: 'error.type',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  /** Ebb's own: the error code of every try a retry hid (429s, 5xx), oldest first. */
  failedTries: 'ebb.llm.failed_tries',
  /** Ebb's own: what a call was for (`reply`, `summary`, `merge`). */
  purpose: 'ebb.llm.purpose',
} as const;

/** The instrumentation scope of Ebb's own spans. */
export const EBB_TRACER_NAME = '@ebb/observability';

export interface TracedChatModelOptions {
  /** `gen_ai.provider.name`: who serves the model. `openai` (any OpenAI-compatible server) by default. */
  readonly provider?: string;
  /** The server the model is asked at (`[llm] base_url`, else OpenAI's): `server.address` and `server.port`. */
  readonly baseUrl?: string;
}

const DEFAULT_PROVIDER = 'openai';

export function tracedChatModel(model: ChatModel, options: TracedChatModelOptions = {}): ChatModel {
  // A proxy: it follows the provider `startTracing` registers, even one registered after this.
  const tracer = trace.getTracer(EBB_TRACER_NAME, EBB_VERSION);
  const name = `chat ${model.label}`;
  const attributes: Attributes = Object.freeze({
    [GEN_AI_ATTRIBUTES.operationName]: 'chat',
    [GEN_AI_ATTRIBUTES.providerName]: options.provider ?? DEFAULT_PROVIDER,
    [GEN_AI_ATTRIBUTES.requestModel]: model.label,
    ...serverAttributes(options.baseUrl),
  });
  return {
    label: model.label,
    reply(messages, replyOptions) {
      return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
        try {
          const reply = await model.reply(messages, replyOptions);
          if (span.isRecording()) span.setAttributes(replyAttributes(reply));
          return reply;
        } catch (err) {
          const code = errorCodeOf(err);
          const tries = triesOf(err);
          span.setAttributes({
            [GEN_AI_ATTRIBUTES.errorType]: code,
            ...(tries?.length ? { [GEN_AI_ATTRIBUTES.failedTries]: [...tries] } : {}),
          });
          span.setStatus({ code: SpanStatusCode.ERROR, message: code });
          throw err;
        } finally {
          span.end();
        }
      });
    },
  };
}

function replyAttributes(reply: ChatReply): Attributes {
  const counts: Attributes = {};
  if (reply.promptTokens !== undefined) counts[GEN_AI_ATTRIBUTES.inputTokens] = reply.promptTokens;
  if (reply.cachedPromptTokens !== undefined) {
    counts[GEN_AI_ATTRIBUTES.cacheReadInputTokens] = reply.cachedPromptTokens;
  }
  if (reply.completionTokens !== undefined) counts[GEN_AI_ATTRIBUTES.outputTokens] = reply.completionTokens;
  return {
    ...counts,
    ...(reply.responseModel === undefined ? {} : { [GEN_AI_ATTRIBUTES.responseModel]: reply.responseModel }),
    ...(reply.finishReason === undefined ? {} : { [GEN_AI_ATTRIBUTES.finishReasons]: [reply.finishReason] }),
    ...(reply.failedTries?.length ? { [GEN_AI_ATTRIBUTES.failedTries]: [...reply.failedTries] } : {}),
  };
}

function serverAttributes(baseUrl: string | undefined): Attributes {
  if (baseUrl === undefined) return {};
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return {};
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { [GEN_AI_ATTRIBUTES.serverAddress]: url.hostname, [GEN_AI_ATTRIBUTES.serverPort]: port };
}

/** A span per `summarize()`, and one child per model call it reports (see the header). */
export function tracedSummarizer(summarizer: Summarizer, options: TracedChatModelOptions = {}): Summarizer {
  const tracer = trace.getTracer(EBB_TRACER_NAME, EBB_VERSION);
  return {
    summarize(input, signal) {
      return tracer.startActiveSpan('ebb summarize', async (span) => {
        try {
          const output = await summarizer.summarize(input, signal);
          if (span.isRecording()) callSpans(tracer, output.calls, options);
          return output;
        } catch (err) {
          if (err instanceof SummarizerGaveUpError && span.isRecording())
            callSpans(tracer, err.calls, options);
          span.setStatus({ code: SpanStatusCode.ERROR, message: errorCodeOf(err) });
          throw err;
        } finally {
          span.end();
        }
      });
    },
  };
}

/** The calls as CLIENT spans of the active one, ending now, each as long as it took. */
function callSpans(tracer: Tracer, calls: readonly LlmCall[], options: TracedChatModelOptions): void {
  let end = Date.now();
  for (const call of [...calls].reverse()) {
    const start = end - call.durationMs;
    const span = tracer.startSpan(`chat ${call.model}`, {
      kind: SpanKind.CLIENT,
      startTime: start,
      attributes: {
        [GEN_AI_ATTRIBUTES.operationName]: 'chat',
        [GEN_AI_ATTRIBUTES.providerName]: options.provider ?? DEFAULT_PROVIDER,
        [GEN_AI_ATTRIBUTES.requestModel]: call.model,
        [GEN_AI_ATTRIBUTES.inputTokens]: call.inputTokens,
        [GEN_AI_ATTRIBUTES.outputTokens]: call.outputTokens,
        [GEN_AI_ATTRIBUTES.purpose]: call.purpose,
        ...(call.cachedInputTokens === undefined
          ? {}
          : { [GEN_AI_ATTRIBUTES.cacheReadInputTokens]: call.cachedInputTokens }),
        ...(call.failedTries?.length ? { [GEN_AI_ATTRIBUTES.failedTries]: [...call.failedTries] } : {}),
        ...(call.error === undefined ? {} : { [GEN_AI_ATTRIBUTES.errorType]: call.error }),
        ...serverAttributes(options.baseUrl),
      },
    });
    if (call.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: call.error });
    span.end(end);
    end = start;
  }
}
