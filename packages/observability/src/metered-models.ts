/**
 * Decorators that report a model's calls as `LlmCall`s (to `EbbMetrics.onLlmCalls`) without the
 * callers knowing: wrap the summarizer where the worker builds it, and the chat model where the
 * bot builds it.
 */
import { type ChatModel, errorCodeOf, type LlmCall, type Summarizer, SummarizerGaveUpError } from '@ebb/core';
import { triesOf } from './call-failures.js';

export type LlmCallSink = (calls: readonly LlmCall[]) => void;

/**
 * Reports the calls of every summary the summarizer writes (summary and merge calls, including the
 * failed ones before a fallback), and of every pass it gives up on (`SummarizerGaveUpError`). A
 * checkpointed output reused on a retry is not summarized again, so it is not counted twice.
 */
export function meteredSummarizer(summarizer: Summarizer, onCalls: LlmCallSink): Summarizer {
  return {
    async summarize(input, signal) {
      try {
        const output = await summarizer.summarize(input, signal);
        onCalls(output.calls);
        return output;
      } catch (err) {
        if (err instanceof SummarizerGaveUpError) onCalls(err.calls);
        throw err;
      }
    },
  };
}

/**
 * Reports one `reply` call per `reply()`: the provider's token counts (the cached part too) and the
 * time it took, retries included, with the code of every try that failed; a reply that throws is a
 * call with the error's code. Wrap real models only:
 * the offline responder is not an LLM.
 */
export function meteredChatModel(
  model: ChatModel,
  onCalls: LlmCallSink,
  now: () => number = performance.now.bind(performance),
): ChatModel {
  return {
    label: model.label,
    async reply(messages, options) {
      const started = now();
      const call = { purpose: 'reply', model: model.label, attempts: 1 } as const;
      try {
        const reply = await model.reply(messages, options);
        onCalls([
          {
            ...call,
            inputTokens: reply.promptTokens ?? 0,
            ...(reply.cachedPromptTokens === undefined
              ? {}
              : { cachedInputTokens: reply.cachedPromptTokens }),
            outputTokens: reply.completionTokens ?? 0,
            durationMs: now() - started,
            ...(reply.failedTries?.length ? { failedTries: reply.failedTries } : {}),
          },
        ]);
        return reply;
      } catch (err) {
        const failedTries = triesOf(err);
        onCalls([
          {
            ...call,
            inputTokens: 0,
            outputTokens: 0,
            durationMs: now() - started,
            error: errorCodeOf(err),
            ...(failedTries ? { failedTries } : {}),
          },
        ]);
        throw err;
      }
    },
  };
}
