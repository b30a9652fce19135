/**
 * A summarizer whose passes add their calls to the channel's usage record (`llm_usage`, purpose
 * `summary`), so a channel's cost in `ebb status` and the dashboard includes its passes. Like the
 * metrics, a pass the summarizer gave up on counts the calls it made; a failed record is logged and
 * never fails the pass. The record is written before the summary is returned, so a command that
 * closes its database right after (`ebb forget`) does not lose it.
 */
import {
  type LlmCall,
  type Logger,
  SILENT_LOGGER,
  type Summarizer,
  SummarizerGaveUpError,
  type UsageStore,
} from '@ebb/core';

export function recordedSummarizer(
  summarizer: Summarizer,
  usage: UsageStore,
  log: Logger = SILENT_LOGGER,
): Summarizer {
  const record = async (channelKey: string, calls: readonly LlmCall[]): Promise<void> => {
    const byModel = new Map<string, { calls: number; prompt: number; cached: number; completion: number }>();
    for (const call of calls) {
      const sum = byModel.get(call.model) ?? { calls: 0, prompt: 0, cached: 0, completion: 0 };
      sum.calls += 1;
      sum.prompt += call.inputTokens;
      sum.cached += call.cachedInputTokens ?? 0;
      sum.completion += call.outputTokens;
      byModel.set(call.model, sum);
    }
    const at = new Date();
    const records = [...byModel].map(([model, sum]) =>
      usage
        .record(
          {
            channelKey,
            purpose: 'summary',
            model,
            calls: sum.calls,
            promptTokens: sum.prompt,
            cachedTokens: sum.cached,
            completionTokens: sum.completion,
          },
          at,
        )
        .catch((err: unknown) =>
          log.warn(
            { event: 'usage.record_failed', channel: channelKey, err },
            'could not record a pass’s usage',
          ),
        ),
    );
    await Promise.all(records);
  };
  return {
    async summarize(input, signal) {
      try {
        const output = await summarizer.summarize(input, signal);
        await record(input.channelKey, output.calls);
        return output;
      } catch (err) {
        if (err instanceof SummarizerGaveUpError) await record(input.channelKey, err.calls);
        throw err;
      }
    },
  };
}
